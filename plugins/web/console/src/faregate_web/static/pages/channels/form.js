// Adding and editing a channel: the fields of POST / PUT /api/channel/ (see the gateway's
// channel_bodies.py), with the type's own hints (its default base URL, what `other` means),
// the keys one a line for a batch or a multi-key channel, and the models filled from the
// upstream's list or the type's catalogue.
import { useState } from 'preact/hooks'
import { html } from '../../lib/html.js'
import { api } from '../../lib/api.js'
import { t as common } from '../../lib/strings.js'
import { ErrorText, Field, toast } from '../../lib/ui.js'
import { t } from './strings.js'
import { checkJson, multiKey, splitList, typeName } from './util.js'

// what `other` holds for the types that read it
// the key formats new-api's channel types take (each checked by its plugin when saved)
const KEY_HINT = { 3: 'keyAzure', 33: 'keyAws', 41: 'keyVertex' }
const REGIONAL = new Set([33, 41]) // no base URL needed: the region's endpoint
const OTHER = { 3: ['otherAzure', '2025-04-01-preview'], 24: ['otherGemini', 'v1beta'], 33: ['otherRegion', 'us-east-1'],
  39: ['otherCloudflare', ''], 41: ['otherRegion', 'global'] }
const JSON_FIELDS = ['model_mapping', 'status_code_mapping', 'setting', 'param_override', 'header_override']
const TEXT_FIELDS = ['name', 'base_url', 'other', 'models', 'group', 'tag', 'remark', 'test_model', 'openai_organization']

function initial (channel) {
  const c = channel || {}
  const out = { type: c.type ?? 1, key: '', priority: c.priority ?? 0, weight: c.weight ?? 0, auto_ban: c.auto_ban ?? 1 }
  for (const name of [...TEXT_FIELDS, ...JSON_FIELDS]) out[name] = c[name] ?? ''
  if (!channel) out.group = 'default'
  return { ...out, mode: 'single', multi_key_mode: c.channel_info?.multi_key_mode || 'random', key_mode: 'append', prefix: false }
}

function mergeModels (current, more) {
  return [...new Set([...splitList(current), ...more])].join(',')
}

export function ChannelForm ({ channel, types, groups, onSaved, onCancel }) {
  const [v, setV] = useState(() => initial(channel))
  const [error, setError] = useState(null)
  const [busy, setBusy] = useState(false)
  const set = name => e => {
    const el = e.currentTarget
    const value = el.type === 'checkbox' ? el.checked : el.type === 'number' ? (el.value === '' ? '' : Number(el.value)) : el.value
    setV(old => ({ ...old, [name]: value }))
  }
  const type = Number(v.type)
  const info = types.find(x => x.type === type)
  const multi = channel ? multiKey(channel) : null
  const other = OTHER[type]

  const fetchUpstream = async () => {
    try {
      const list = await api(`/api/channel/fetch_models/${channel.id}`)
      const ids = list.map(m => (typeof m === 'string' ? m : m.id)).filter(Boolean)
      setV(old => ({ ...old, models: mergeModels(old.models, ids) }))
      toast(t('modelsFetched', { count: ids.length }))
    } catch (err) { setError(err) }
  }
  const fromCatalog = async () => {
    try {
      const byType = await api('/api/models')
      const ids = byType[String(type)] || []
      setV(old => ({ ...old, models: mergeModels(old.models, ids) }))
      toast(t('modelsFetched', { count: ids.length }))
    } catch (err) { setError(err) }
  }

  const submit = async e => {
    e.preventDefault()
    setError(null)
    const body = { type, priority: Number(v.priority || 0), weight: Number(v.weight || 0), auto_ban: v.auto_ban ? 1 : 0 }
    try {
      for (const name of TEXT_FIELDS) body[name] = String(v[name] || '').trim()
      body.models = splitList(v.models).join(',')
      body.group = splitList(v.group).join(',')
      for (const name of JSON_FIELDS) body[name] = checkJson(v[name], t(name))
    } catch (err) {
      setError(err)
      return
    }
    if (v.key.trim()) body.key = v.key.trim()
    setBusy(true)
    try {
      if (channel) {
        if (multi) Object.assign(body, { key_mode: v.key_mode, multi_key_mode: v.multi_key_mode })
        await api('/api/channel/', { method: 'PUT', body: { id: channel.id, ...body } })
      } else {
        const extra = v.mode === 'multi_to_single' ? { multi_key_mode: v.multi_key_mode } : {}
        if (v.mode === 'batch') extra.batch_add_set_key_prefix_2_name = v.prefix
        await api('/api/channel/', { method: 'POST', body: { mode: v.mode, ...extra, channel: body } })
      }
      toast(common('saved'))
      onSaved()
    } catch (err) {
      setError(err)
    } finally {
      setBusy(false)
    }
  }

  const many = !channel && v.mode !== 'single'
  return html`<form class="form-grid ch-form" onSubmit=${submit}>
    <${Field} label=${t('type')}>
      <select name="type" value=${String(type)} onChange=${e => setV(old => ({ ...old, type: Number(e.currentTarget.value) }))} required>
        ${info ? null : html`<option value=${String(type)}>${typeName(type, types)}</option>`}
        ${types.map(x => html`<option value=${String(x.type)}>${typeName(x.type, types)} (${x.type})</option>`)}
      </select></${Field}>
    <${Field} label=${t('name')}><input name="name" required maxlength="128" value=${v.name} onInput=${set('name')} /></${Field}>
    ${!channel ? html`<${Field} label=${t('keyMode')}>
      <select name="mode" value=${v.mode} onChange=${set('mode')}>
        <option value="single">${t('modeSingle')}</option>
        <option value="batch">${t('modeBatch')}</option>
        <option value="multi_to_single">${t('modeMulti')}</option>
      </select></${Field}>` : null}
    ${(v.mode === 'multi_to_single' && !channel) || multi ? html`<${Field} label=${t('rotation')}>
      <select name="multi_key_mode" value=${v.multi_key_mode} onChange=${set('multi_key_mode')}>
        <option value="random">${t('rotationRandom')}</option>
        <option value="polling">${t('rotationPolling')}</option>
      </select></${Field}>` : null}
    ${multi ? html`<${Field} label=${t('keyUpdate')}>
      <select name="key_mode" value=${v.key_mode} onChange=${set('key_mode')}>
        <option value="append">${t('keyAppend')}</option>
        <option value="replace">${t('keyReplace')}</option>
      </select></${Field}>` : null}
    <${Field} wide label=${many || multi ? t('keys') : t('key')}
      hint=${channel ? t('keyKeep') : many ? t('keysHint') : t(KEY_HINT[type] || 'keyHint')}>
      <textarea name="key" required=${!channel} rows=${many || multi ? 4 : 2} autocomplete="off" spellcheck="false"
        value=${v.key} onInput=${set('key')}></textarea></${Field}>
    ${v.mode === 'batch' && !channel ? html`<label class="check field wide"><input type="checkbox" name="prefix" checked=${v.prefix}
      onChange=${set('prefix')} /> ${t('batchPrefix')}</label>` : null}
    <${Field} wide label=${t('baseUrl')} hint=${info?.default_base_url ? t('baseUrlDefault', { url: info.default_base_url })
      : REGIONAL.has(type) ? t('baseUrlRegional') : t('baseUrlNeeded')}>
      <input name="base_url" type="url" maxlength="512" value=${v.base_url} placeholder=${info?.default_base_url || 'https://'}
        required=${!!info && !info.default_base_url && !REGIONAL.has(type)} onInput=${set('base_url')} /></${Field}>
    <${Field} label=${other ? t(other[0]) : t('other')} hint=${other ? t('otherExample', { example: other[1] || '—' }) : t('otherHint')}>
      <input name="other" value=${v.other} onInput=${set('other')} /></${Field}>
    ${type === 1 ? html`<${Field} label=${t('organization')}>
      <input name="openai_organization" maxlength="128" value=${v.openai_organization} onInput=${set('openai_organization')} /></${Field}>` : null}
    <${Field} wide label=${t('models')} hint=${t('modelsHint')}>
      <textarea name="models" rows="3" required value=${v.models} onInput=${set('models')}></textarea></${Field}>
    <div class="row ch-wide">
      <button type="button" onClick=${fetchUpstream} disabled=${!channel}>${t('fetchModels')}</button>
      <button type="button" onClick=${fromCatalog}>${t('catalogModels')}</button>
      <button type="button" onClick=${() => setV(old => ({ ...old, models: '' }))}>${t('clearModels')}</button>
      ${!channel ? html`<span class="hint">${t('fetchAfterSave')}</span>` : null}
    </div>
    <${Field} label=${t('testModel')}><input name="test_model" maxlength="255" value=${v.test_model} onInput=${set('test_model')} /></${Field}>
    <${Field} label=${t('groups')} hint=${groups.length ? t('groupsHint', { groups: groups.join(', ') }) : ''}>
      <input name="group" maxlength="255" value=${v.group} onInput=${set('group')} /></${Field}>
    <${Field} label=${t('priority')}><input name="priority" type="number" step="1" value=${v.priority} onInput=${set('priority')} /></${Field}>
    <${Field} label=${t('weight')}><input name="weight" type="number" min="0" step="1" value=${v.weight} onInput=${set('weight')} /></${Field}>
    <${Field} label=${t('tag')}><input name="tag" maxlength="128" value=${v.tag} onInput=${set('tag')} /></${Field}>
    <${Field} label=${t('remark')}><input name="remark" maxlength="255" value=${v.remark} onInput=${set('remark')} /></${Field}>
    <label class="check field"><input type="checkbox" name="auto_ban" checked=${!!v.auto_ban} onChange=${set('auto_ban')} /> ${t('autoBan')}</label>
    <details class="ch-wide" open=${JSON_FIELDS.some(n => v[n])}>
      <summary>${t('advanced')}</summary>
      <div class="form-grid">
        ${JSON_FIELDS.map(name => html`<${Field} wide label=${t(name)} hint=${t(`${name}Hint`)}>
          <textarea name=${name} rows="3" spellcheck="false" value=${v[name]} onInput=${set(name)}></textarea></${Field}>`)}
      </div>
    </details>
    <${ErrorText} error=${error} />
    <div class="row ch-wide">
      <button type="submit" disabled=${busy} aria-busy=${busy}>${channel ? common('save') : common('create')}</button>
      <button type="button" onClick=${onCancel}>${common('cancel')}</button>
    </div>
  </form>`
}
