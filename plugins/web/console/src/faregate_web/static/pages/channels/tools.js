// The channels page's operations beyond the list: testing one channel or all of them,
// balances, tags, and the keys of a multi-key channel.
import { useRef, useState } from 'preact/hooks'
import { html } from '../../lib/html.js'
import { api } from '../../lib/api.js'
import { t as common } from '../../lib/strings.js'
import { timeText } from '../../lib/format.js'
import { ActionButton, ErrorText, Field, Modal, Table, formValues, toast, useAsync } from '../../lib/ui.js'
import { t } from './strings.js'
import { eachLimited, enabledChannels, splitList, testChannel } from './util.js'

const ENDPOINT_TYPES = ['', 'openai-response', 'anthropic', 'gemini', 'embeddings', 'image-generation',
  'jina-rerank', 'moderations', 'completions']
const TEST_ALL_AT_ONCE = 3

export function TestDialog ({ channel }) {
  const models = splitList(channel.models)
  const [model, setModel] = useState(channel.test_model || models[0] || '')
  const [endpoint, setEndpoint] = useState('')
  const [result, setResult] = useState(null)
  const [busy, setBusy] = useState(false)
  const run = async e => {
    e.preventDefault()
    setBusy(true)
    setResult(null)
    try {
      setResult(await testChannel(channel.id, { model, endpoint_type: endpoint }))
    } catch (err) {
      setResult({ success: false, message: err.message })
    } finally {
      setBusy(false)
    }
  }
  return html`<form class="form-grid" onSubmit=${run}>
    <${Field} label=${t('testModel')}>
      <select name="model" value=${model} onChange=${e => setModel(e.currentTarget.value)}>
        ${channel.test_model && !models.includes(channel.test_model) ? html`<option value=${channel.test_model}>${channel.test_model}</option>` : null}
        ${models.map(m => html`<option value=${m}>${m}</option>`)}
      </select></${Field}>
    <${Field} label=${t('endpointType')}>
      <select name="endpoint_type" value=${endpoint} onChange=${e => setEndpoint(e.currentTarget.value)}>
        ${ENDPOINT_TYPES.map(e => html`<option value=${e}>${e || t('endpointAuto')}</option>`)}
      </select></${Field}>
    <button type="submit" disabled=${busy} aria-busy=${busy}>${busy ? t('testing') : t('runTest')}</button>
  </form>
  <div aria-live="polite" class="ch-result">
    ${result && result.success ? html`<p class="good">${t('testOk', { s: result.time.toFixed(2) })}</p>` : null}
    ${result && !result.success ? html`<p class="error" role="alert">${t('testFailed', { message: result.message })}</p>` : null}
  </div>`
}

export function TestAllPanel ({ onDone, onClose }) {
  const [state, setState] = useState(null) // {total, done, ok, failures, running}
  const stop = useRef(false)
  const start = async () => {
    stop.current = false
    setState({ total: 0, done: 0, ok: 0, failures: [], running: true, listing: true })
    let channels
    try {
      channels = await enabledChannels()
    } catch (err) {
      setState(null)
      toast(common('error', { message: err.message }), 'bad')
      return
    }
    const tally = { total: channels.length, done: 0, ok: 0, failures: [], running: true, listing: false }
    setState({ ...tally })
    await eachLimited(channels, TEST_ALL_AT_ONCE, async row => {
      try {
        const got = await testChannel(row.id, {})
        if (got.success) tally.ok++
        else tally.failures.push({ id: row.id, name: row.name, message: got.message })
      } catch (err) {
        tally.failures.push({ id: row.id, name: row.name, message: err.message })
      }
    }, () => { tally.done++; setState({ ...tally, failures: [...tally.failures] }) }, () => stop.current)
    setState({ ...tally, failures: [...tally.failures], running: false, stopped: stop.current })
    onDone()
  }
  return html`<section class="panel" aria-labelledby="test-all-head">
    <div class="row ch-between">
      <h2 id="test-all-head" class="ch-title">${t('testAll')}</h2>
      <button type="button" onClick=${onClose} disabled=${state?.running}>${common('close')}</button>
    </div>
    ${!state ? html`<p>${t('testAllIntro')}</p><button type="button" class="primary" onClick=${start}>${t('startTests')}</button>` : null}
    ${state ? html`
      <progress max=${state.total || 1} value=${state.listing ? undefined : state.done} aria-label=${t('testAll')}></progress>
      <p role="status">${state.listing ? t('listing') : t('testProgress', { done: state.done, total: state.total, ok: state.ok, failed: state.failures.length })}
        ${!state.running ? ` — ${state.stopped ? t('stopped') : t('finished')}` : ''}</p>
      ${state.running ? html`<button type="button" onClick=${() => { stop.current = true }}>${t('stop')}</button>`
        : html`<button type="button" onClick=${start}>${t('again')}</button>`}
      ${state.failures.length ? html`<ul class="ch-failures">
        ${state.failures.map(f => html`<li key=${f.id}><strong>#${f.id} ${f.name}</strong>: ${f.message}</li>`)}</ul>` : null}` : null}
  </section>`
}

export function BalancesPanel ({ onDone }) {
  const [state, setState] = useState(null)
  const run = async () => {
    setState({ running: true })
    try {
      const s = await api('/api/channel/update_balance')
      setState({ running: false, text: t('balancesDone', s) })
      onDone()
    } catch (err) {
      setState({ running: false, error: err })
    }
  }
  return html`<div class="ch-tool">
    <button type="button" onClick=${run} disabled=${state?.running} aria-busy=${!!state?.running}>${t('updateAllBalances')}</button>
    ${state?.running ? html`<progress aria-label=${t('updateAllBalances')}></progress><p role="status">${t('updatingBalances')}</p>` : null}
    ${state?.text ? html`<p role="status">${state.text}</p>` : null}
    <${ErrorText} error=${state?.error} />
  </div>`
}

export function TagTools ({ onDone, onShow }) {
  const [tag, setTag] = useState('')
  const [editing, setEditing] = useState(false)
  const act = async path => {
    const n = await api(path, { method: 'POST', body: { tag: tag.trim() } })
    toast(t('tagChanged', { count: n, tag: tag.trim() }))
    onDone()
  }
  const empty = !tag.trim()
  return html`<div class="ch-tool">
    <div class="row">
      <${Field} label=${t('tag')}><input name="tag-ops" maxlength="128" value=${tag} onInput=${e => setTag(e.currentTarget.value)} /></${Field}>
      <button type="button" disabled=${empty} onClick=${() => onShow(tag.trim())}>${t('showTag')}</button>
      <${ActionButton} action=${() => act('/api/channel/tag/enabled')} label=${t('enableTag')}>${t('enableTag')}</${ActionButton}>
      <${ActionButton} action=${() => act('/api/channel/tag/disabled')} label=${t('disableTag')}>${t('disableTag')}</${ActionButton}>
      <button type="button" disabled=${empty} onClick=${() => setEditing(true)}>${t('editTag')}</button>
    </div>
    <${Modal} open=${editing} title=${t('editTagTitle', { tag: tag.trim() })} onClose=${() => setEditing(false)}>
      ${editing ? html`<${TagEditForm} tag=${tag.trim()} onDone=${(renamed) => { setEditing(false); if (renamed !== undefined) setTag(renamed); onDone() }} />` : null}
    </${Modal}>
  </div>`
}

/** new-api's tag edit (PUT /api/channel/tag): what is left empty keeps each channel's value. */
function TagEditForm ({ tag, onDone }) {
  const [error, setError] = useState(null)
  const submit = async e => {
    e.preventDefault()
    const v = formValues(e.currentTarget)
    const body = { tag }
    for (const name of ['new_tag', 'models', 'groups', 'model_mapping']) {
      if (v[name].trim()) body[name] = v[name].trim()
    }
    if (v.priority !== undefined) body.priority = v.priority
    if (v.weight !== undefined) body.weight = v.weight
    if (body.model_mapping) {
      try { JSON.parse(body.model_mapping) } catch { return setError(new Error(t('badJson', { field: t('model_mapping') }))) }
    }
    try {
      const n = await api('/api/channel/tag', { method: 'PUT', body })
      toast(t('tagChanged', { count: n, tag }))
      onDone(body.new_tag)
    } catch (err) { setError(err) }
  }
  return html`<form class="form-grid" onSubmit=${submit}>
    <p class="field wide muted">${t('editTagHint')}</p>
    <${Field} label=${t('newTag')}><input name="new_tag" maxlength="128" /></${Field}>
    <${Field} label=${t('priority')}><input name="priority" type="number" step="1" /></${Field}>
    <${Field} label=${t('weight')}><input name="weight" type="number" min="0" step="1" /></${Field}>
    <${Field} wide label=${t('models')}><textarea name="models" rows="2"></textarea></${Field}>
    <${Field} wide label=${t('groups')}><input name="groups" maxlength="1024" /></${Field}>
    <${Field} wide label=${t('model_mapping')}><textarea name="model_mapping" rows="2" spellcheck="false"></textarea></${Field}>
    <button type="submit">${common('save')}</button>
    <${ErrorText} error=${error} />
  </form>`
}

const KEY_STATUS = { 1: 'statusEnabled', 2: 'statusManual', 3: 'statusAuto' }

export function KeysDialog ({ channel }) {
  const [page, setPage] = useState(1)
  const manage = (action, extra = {}) => api('/api/channel/multi_key/manage', {
    method: 'POST', body: { channel_id: channel.id, action, ...extra }
  })
  const keys = useAsync(() => manage('get_key_status', { page, page_size: 50 }), [page])
  const act = async (action, extra) => {
    await manage(action, extra)
    toast(common('saved'))
    keys.reload()
  }
  const d = keys.data
  const columns = [
    { label: t('keyIndex'), key: 'index' },
    { label: t('keyPreview'), render: k => html`<code>${k.key_preview}</code>` },
    { label: t('status'), render: k => html`<span class=${k.status === 1 ? 'badge on' : 'badge off'}>${t(KEY_STATUS[k.status] || 'statusManual')}</span>` },
    { label: t('keyReason'), render: k => k.reason ? `${k.reason} (${timeText(k.disabled_time)})` : '' },
    {
      label: common('actions'),
      render: k => html`<div class="ch-actions">
        ${k.status === 1
          ? html`<${ActionButton} action=${() => act('disable_key', { key_index: k.index })} label=${t('disableKey', { index: k.index })}>${common('disable')}</${ActionButton}>`
          : html`<${ActionButton} action=${() => act('enable_key', { key_index: k.index })} label=${t('enableKey', { index: k.index })}>${common('enable')}</${ActionButton}>`}
        <${ActionButton} class="danger" action=${() => act('delete_key', { key_index: k.index })} confirm=${t('confirmDeleteKey')}
          label=${t('deleteKey', { index: k.index })}>${common('delete')}</${ActionButton}>
      </div>`
    }
  ]
  return html`<div>
    <${ErrorText} error=${keys.error} />
    ${d ? html`<p>${t('keyCounts', { enabled: d.enabled_count, manual: d.manual_disabled_count, auto: d.auto_disabled_count })}
      ${` · ${t('rotation')}: ${t(channel.channel_info?.multi_key_mode === 'polling' ? 'rotationPolling' : 'rotationRandom')}`}</p>
      <div class="row">
        <${ActionButton} action=${() => act('enable_all_keys')}>${t('enableAllKeys')}</${ActionButton}>
        <${ActionButton} action=${() => act('disable_all_keys')}>${t('disableAllKeys')}</${ActionButton}>
        <${ActionButton} class="danger" action=${() => act('delete_disabled_keys')} confirm=${t('confirmDeleteAuto')}>${t('deleteAutoKeys')}</${ActionButton}>
      </div>
      <${Table} caption=${t('keys')} columns=${columns} rows=${d.keys} rowKey=${k => k.index} />
      ${d.total_pages > 1 ? html`<div class="pager">
        <button type="button" disabled=${page <= 1} onClick=${() => setPage(page - 1)}>${common('previous')}</button>
        <span>${common('pageOf', { page: d.page, pages: d.total_pages, total: d.total })}</span>
        <button type="button" disabled=${page >= d.total_pages} onClick=${() => setPage(page + 1)}>${common('next')}</button></div>` : null}` : null}
  </div>`
}
