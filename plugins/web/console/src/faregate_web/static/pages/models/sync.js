// The upstream sync, as new-api's: a preview first (what would be created, which rows
// differ from upstream), then the sync of what the admin keeps checked. Both steps can
// take a while (the upstream catalogue is fetched each time): a progress bar says so, and
// the sync says how many items it is doing (the route is one request: its counts come at
// the end, so the bar itself cannot move).
import { useEffect, useState } from 'preact/hooks'
import { html } from '../../lib/html.js'
import { api } from '../../lib/api.js'
import { lang } from '../../lib/i18n.js'
import { ErrorText } from '../../lib/ui.js'
import { t } from './strings.js'

function Busy ({ text }) {
  return html`<div class="adm-stack" role="status">
    <p>${text}</p>
    <progress aria-label=${text}></progress>
  </div>`
}

function Preview ({ preview, onRun }) {
  const submit = e => {
    e.preventDefault()
    const create = []
    const overwrite = {}
    for (const el of e.currentTarget.elements) {
      if (el.type !== 'checkbox' || !el.checked) continue
      if (el.name === 'create') create.push(el.value)
      else if (el.name === 'overwrite') {
        const [model, field] = JSON.parse(el.value)
        ;(overwrite[model] = overwrite[model] || []).push(field)
      }
    }
    onRun({
      create,
      overwrite: Object.entries(overwrite).map(([name, fields]) => ({ model_name: name, fields })),
      locale: preview.source.locale || ''
    })
  }
  const nothing = preview.missing.length === 0 && preview.conflicts.length === 0
  return html`<form class="adm-stack" onSubmit=${submit}>
    <p class="muted">${t('syncSource', { url: preview.source.models_url })}</p>
    ${nothing ? html`<p>${t('syncNothing')}</p>` : null}
    ${preview.missing.length ? html`<fieldset>
        <legend>${t('syncCreate', { count: preview.missing.length })}</legend>
        <p class="hint">${t('syncCreateHint')}</p>
        <div class="adm-check-list">
          ${preview.missing.map(name => html`<label class="check" key=${name}>
            <input type="checkbox" name="create" value=${name} defaultChecked /> <code>${name}</code></label>`)}
        </div>
      </fieldset>` : null}
    ${preview.conflicts.length ? html`<fieldset>
        <legend>${t('syncConflicts', { count: preview.conflicts.length })}</legend>
        <p class="hint">${t('syncConflictsHint')}</p>
        ${preview.conflicts.map(c => html`<div key=${c.model_name} class="adm-conflict">
          <strong><code>${c.model_name}</code></strong>
          ${c.fields.map(f => html`<label class="check">
            <input type="checkbox" name="overwrite" value=${JSON.stringify([c.model_name, f.field])} />
            <span>${f.field}: ${t('local')} <code>${String(f.local) || '∅'}</code> → ${t('upstream')} <code>${String(f.upstream) || '∅'}</code></span>
          </label>`)}
        </div>`)}
      </fieldset>` : null}
    ${preview.locked.length ? html`<p class="muted">${t('syncLocked', { count: preview.locked.length })}</p>` : null}
    ${preview.unknown.length ? html`<p class="muted">${t('syncUnknown', { count: preview.unknown.length })}</p>` : null}
    ${preview.ignored ? html`<p class="muted">${t('syncIgnored', { count: preview.ignored })}</p>` : null}
    ${nothing ? null : html`<div class="row"><button type="submit">${t('syncRun')}</button></div>`}
  </form>`
}

export function SyncDialog () {
  // stage: loading → preview → running → done (or error, from either step)
  const [state, setState] = useState({ stage: 'loading' })
  const load = () => {
    setState({ stage: 'loading' })
    api('/api/models/sync_upstream/preview', { params: { locale: lang() } }).then(
      preview => setState({ stage: 'preview', preview }),
      error => setState({ stage: 'error', error }))
  }
  useEffect(load, [])
  const run = body => {
    const fields = body.overwrite.reduce((n, o) => n + o.fields.length, 0)
    setState({ stage: 'running', create: body.create.length, fields })
    api('/api/models/sync_upstream', { method: 'POST', body }).then(
      result => setState({ stage: 'done', result }),
      error => setState({ stage: 'error', error }))
  }
  if (state.stage === 'loading') return html`<${Busy} text=${t('syncLoading')} />`
  if (state.stage === 'running') return html`<${Busy} text=${t('syncRunning', { create: state.create, fields: state.fields })} />`
  if (state.stage === 'error') {
    return html`<div class="adm-stack"><${ErrorText} error=${state.error} />
      <div class="row"><button type="button" onClick=${load}>${t('syncRetry')}</button></div></div>`
  }
  if (state.stage === 'preview') return html`<${Preview} preview=${state.preview} onRun=${run} />`
  const r = state.result
  return html`<div class="adm-stack" role="status">
    <p class="good">${t('syncDone', { models: r.created_models, vendors: r.created_vendors, updated: r.updated_models })}</p>
    ${r.skipped_models.length ? html`<p class="muted">${t('syncSkipped', { names: r.skipped_models.join(', ') })}</p>` : null}
  </div>`
}
