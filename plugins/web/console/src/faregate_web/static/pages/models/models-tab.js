// The models tab: model metadata (search, vendor filter, create, edit, enable / disable,
// delete) and the models channels serve that have none yet.
import { useState } from 'preact/hooks'
import { html } from '../../lib/html.js'
import { api } from '../../lib/api.js'
import { t as common } from '../../lib/strings.js'
import { ActionButton, ErrorText, Field, Modal, Pager, Table, formValues, toast, useAsync } from '../../lib/ui.js'
import { t } from './strings.js'
import { SyncDialog } from './sync.js'

const PAGE_SIZE = 10
export const RULES = () => [[0, t('ruleExact')], [1, t('rulePrefix')], [2, t('ruleContains')], [3, t('ruleSuffix')]]

function ModelForm ({ row, vendors, onDone }) {
  const editing = Boolean(row.id)
  const [error, setError] = useState(null)
  const [busy, setBusy] = useState(false)
  const submit = async e => {
    e.preventDefault()
    const v = formValues(e.currentTarget)
    const body = {
      ...v,
      vendor_id: Number(v.vendor_id) || 0,
      name_rule: Number(v.name_rule) || 0,
      status: v.status ? 1 : 0,
      sync_official: v.sync_official ? 1 : 0
    }
    setBusy(true)
    setError(null)
    try {
      await api('/api/models/', { method: editing ? 'PUT' : 'POST', body: editing ? { id: row.id, ...body } : body })
      toast(common('saved'))
      onDone(true)
    } catch (err) {
      setError(err)
      setBusy(false)
    }
  }
  return html`<form class="form-grid" onSubmit=${submit}>
    <${Field} label=${t('modelName')}>
      <input name="model_name" required maxlength="255" autocomplete="off" defaultValue=${row.model_name || ''} /></${Field}>
    <${Field} label=${t('vendor')}>
      <select name="vendor_id">
        <option value="0">${t('noVendor')}</option>
        ${vendors.map(v => html`<option value=${v.id} selected=${v.id === row.vendor_id}>${v.name}</option>`)}
      </select></${Field}>
    <${Field} label=${t('nameRule')}>
      <select name="name_rule">
        ${RULES().map(([value, label]) => html`<option value=${value} selected=${value === (row.name_rule || 0)}>${label}</option>`)}
      </select></${Field}>
    <${Field} label=${t('tags')} hint=${t('tagsHint')}>
      <input name="tags" maxlength="255" autocomplete="off" defaultValue=${row.tags || ''} /></${Field}>
    <${Field} label=${t('icon')} hint=${t('iconHint')}>
      <input name="icon" maxlength="128" autocomplete="off" defaultValue=${row.icon || ''} /></${Field}>
    <${Field} label=${t('description')} wide>
      <textarea name="description" maxlength="10000" defaultValue=${row.description || ''} /></${Field}>
    <${Field} label=${t('endpoints')} hint=${t('endpointsHint')} wide>
      <textarea name="endpoints" class="adm-mono" maxlength="10000" defaultValue=${row.endpoints || ''} /></${Field}>
    <label class="check field"><input type="checkbox" name="status" defaultChecked=${row.status !== 0} /> ${t('statusOn')}</label>
    <label class="check field"><input type="checkbox" name="sync_official" defaultChecked=${row.sync_official !== 0} /> ${t('syncOfficial')}</label>
    <div class="row">
      <button type="submit" disabled=${busy}>${editing ? common('save') : common('create')}</button>
      <button type="button" onClick=${() => onDone(false)}>${common('cancel')}</button>
    </div>
    <div class="field wide"><${ErrorText} error=${error} /></div>
  </form>`
}

function Missing ({ missing, onAdd }) {
  if (missing.error) return html`<${ErrorText} error=${missing.error} />`
  const names = missing.data
  if (!names) return null
  if (names.length === 0) return html`<p class="muted">${t('missingNone')}</p>`
  return html`<details class="panel adm-missing">
    <summary>${t('missingTitle')}: ${t('missingSome', { count: names.length })}</summary>
    <ul class="adm-missing-list">
      ${names.map(name => html`<li key=${name}><code>${name}</code>
        <button type="button" aria-label=${t('addThisLabel', { name })} onClick=${() => onAdd(name)}>${t('addThis')}</button></li>`)}
    </ul>
  </details>`
}

export function ModelsTab ({ vendors, onVendorsChanged }) {
  const [page, setPage] = useState(1)
  const [filter, setFilter] = useState({ keyword: '', vendor: '' })
  const [editing, setEditing] = useState(null)
  const [syncing, setSyncing] = useState(false)
  const searching = filter.keyword || filter.vendor
  const list = useAsync(() => api(searching ? '/api/models/search' : '/api/models/',
    { params: { ...filter, p: page, page_size: PAGE_SIZE } }), [page, filter])
  const missing = useAsync(() => api('/api/models/missing'), [])
  const vendorName = id => vendors.find(v => v.id === id)?.name || '—'

  const search = e => {
    e.preventDefault()
    const f = e.currentTarget
    setFilter({ keyword: f.keyword.value.trim(), vendor: f.vendor.value })
    setPage(1)
  }
  const refresh = () => {
    list.reload()
    missing.reload()
  }
  const closed = changed => {
    setEditing(null)
    if (changed) refresh()
  }
  const closeSync = () => {
    if (!syncing) return
    setSyncing(false)
    refresh()
    onVendorsChanged()
  }
  const setStatus = (row, status) => async () => {
    await api('/api/models/', { method: 'PUT', params: { status_only: 'true' }, body: { id: row.id, status } })
    toast(t('statusChanged', { name: row.model_name, state: status ? common('enabled') : common('disabled') }))
    list.reload()
  }
  const remove = row => async () => {
    await api(`/api/models/${row.id}`, { method: 'DELETE' })
    toast(t('deleted', { name: row.model_name }))
    refresh()
  }
  const rules = RULES()
  const columns = [
    {
      label: t('modelName'),
      render: r => html`<code>${r.model_name}</code>
        ${r.name_rule ? html`<br /><span class="muted">${rules[r.name_rule][1]} · ${t('matched', { count: r.matched_count || 0 })}</span>` : null}`
    },
    { label: t('vendor'), render: r => vendorName(r.vendor_id) },
    { label: t('description'), render: r => html`<span class="adm-clamp">${r.description}</span>` },
    { label: t('tags'), render: r => (r.tags || '').split(',').filter(Boolean).map(tag => html`<span class="badge">${tag.trim()}</span> `) },
    { label: t('billing'), render: r => (r.quota_types || []).map(q => (q === 1 ? t('perCall') : t('perToken'))).join(', ') || '—' },
    { label: t('groups'), render: r => (r.enable_groups || []).join(', ') || '—' },
    { label: t('channels'), render: r => (r.bound_channels || []).map(c => c.name).join(', ') || '—' },
    {
      label: t('status'),
      render: r => html`<span class=${r.status ? 'badge on' : 'badge off'}>${r.status ? common('enabled') : common('disabled')}</span>`
    },
    {
      label: common('actions'),
      render: r => html`<div class="row adm-nowrap">
        <button type="button" aria-label=${`${common('edit')} ${r.model_name}`} onClick=${() => setEditing(r)}>${common('edit')}</button>
        <${ActionButton} action=${setStatus(r, r.status ? 0 : 1)} label=${`${r.status ? common('disable') : common('enable')} ${r.model_name}`}>
          ${r.status ? common('disable') : common('enable')}</${ActionButton}>
        <${ActionButton} class="danger" action=${remove(r)} label=${`${common('delete')} ${r.model_name}`}
          confirm=${t('confirmDeleteModel', { name: r.model_name })}>${common('delete')}</${ActionButton}>
      </div>`
    }
  ]
  const data = list.data
  return html`<div class="adm-stack">
    <form class="adm-toolbar" role="search" onSubmit=${search}>
      <label class="adm-grow"><span class="visually-hidden">${t('keyword')}</span>
        <input name="keyword" type="search" maxlength="64" placeholder=${t('keyword')} /></label>
      <label><span class="visually-hidden">${t('vendor')}</span>
        <select name="vendor">
          <option value="">${t('allVendors')}</option>
          ${vendors.map(v => html`<option value=${v.id}>${v.name}</option>`)}
        </select></label>
      <button type="submit">${common('search')}</button>
      <button type="button" class="primary" onClick=${() => setEditing({})}>${t('addModel')}</button>
      <button type="button" onClick=${() => setSyncing(true)}>${t('sync')}</button>
    </form>
    <${Missing} missing=${missing} onAdd=${name => setEditing({ model_name: name })} />
    <${ErrorText} error=${list.error} />
    ${data ? html`<${Table} caption=${t('tabModels')} columns=${columns} rows=${data.items} />
      <${Pager} page=${data.page} pageSize=${data.page_size} total=${data.total} onPage=${setPage} />`
      : list.loading ? html`<p class="loading">${common('loading')}</p>` : null}
    <${Modal} open=${editing !== null} wide onClose=${() => closed(false)}
        title=${editing && editing.id ? t('editModel', { name: editing.model_name }) : t('newModel')}>
      ${editing ? html`<${ModelForm} key=${editing.id || editing.model_name || 'new'} row=${editing} vendors=${vendors} onDone=${closed} />` : null}
    </${Modal}>
    <${Modal} open=${syncing} wide title=${t('syncTitle')} onClose=${closeSync}>
      ${syncing ? html`<${SyncDialog} />` : null}
    </${Modal}>
  </div>`
}
