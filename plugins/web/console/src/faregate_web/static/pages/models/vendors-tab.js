// The vendors tab: who makes the models (search, create, edit, delete).
import { useState } from 'preact/hooks'
import { html } from '../../lib/html.js'
import { api } from '../../lib/api.js'
import { t as common } from '../../lib/strings.js'
import { numberText } from '../../lib/format.js'
import { ActionButton, ErrorText, Field, Modal, Pager, Table, formValues, toast, useAsync } from '../../lib/ui.js'
import { t } from './strings.js'

const PAGE_SIZE = 10

function VendorForm ({ row, onDone }) {
  const editing = Boolean(row.id)
  const [error, setError] = useState(null)
  const [busy, setBusy] = useState(false)
  const submit = async e => {
    e.preventDefault()
    const v = formValues(e.currentTarget)
    const body = { ...v, status: v.status ? 1 : 0 }
    setBusy(true)
    setError(null)
    try {
      await api('/api/vendors/', { method: editing ? 'PUT' : 'POST', body: editing ? { id: row.id, ...body } : body })
      toast(common('saved'))
      onDone(true)
    } catch (err) {
      setError(err)
      setBusy(false)
    }
  }
  return html`<form class="form-grid" onSubmit=${submit}>
    <${Field} label=${t('vendor')}>
      <input name="name" required maxlength="128" autocomplete="off" defaultValue=${row.name || ''} /></${Field}>
    <${Field} label=${t('icon')} hint=${t('iconHint')}>
      <input name="icon" maxlength="128" autocomplete="off" defaultValue=${row.icon || ''} /></${Field}>
    <${Field} label=${t('description')} wide>
      <textarea name="description" maxlength="10000" defaultValue=${row.description || ''} /></${Field}>
    <label class="check field"><input type="checkbox" name="status" defaultChecked=${row.status !== 0} /> ${t('statusOn')}</label>
    <div class="row">
      <button type="submit" disabled=${busy}>${editing ? common('save') : common('create')}</button>
      <button type="button" onClick=${() => onDone(false)}>${common('cancel')}</button>
    </div>
    <div class="field wide"><${ErrorText} error=${error} /></div>
  </form>`
}

export function VendorsTab ({ onChanged }) {
  const [page, setPage] = useState(1)
  const [keyword, setKeyword] = useState('')
  const [editing, setEditing] = useState(null)
  const list = useAsync(() => api(keyword ? '/api/vendors/search' : '/api/vendors/',
    { params: { keyword, p: page, page_size: PAGE_SIZE } }), [page, keyword])

  const search = e => {
    e.preventDefault()
    setKeyword(e.currentTarget.keyword.value.trim())
    setPage(1)
  }
  const changed = () => {
    list.reload()
    onChanged()
  }
  const closed = saved => {
    setEditing(null)
    if (saved) changed()
  }
  const remove = row => async () => {
    await api(`/api/vendors/${row.id}`, { method: 'DELETE' })
    toast(t('deleted', { name: row.name }))
    changed()
  }
  const columns = [
    { label: t('vendor'), render: r => html`<strong>${r.name}</strong>` },
    { label: t('description'), render: r => html`<span class="adm-clamp">${r.description}</span>` },
    { label: t('icon'), render: r => (r.icon ? html`<code>${r.icon}</code>` : '—') },
    { label: t('modelCount'), render: r => numberText(r.model_count) },
    {
      label: t('status'),
      render: r => html`<span class=${r.status ? 'badge on' : 'badge off'}>${r.status ? common('enabled') : common('disabled')}</span>`
    },
    {
      label: common('actions'),
      render: r => html`<div class="row adm-nowrap">
        <button type="button" aria-label=${`${common('edit')} ${r.name}`} onClick=${() => setEditing(r)}>${common('edit')}</button>
        <${ActionButton} class="danger" action=${remove(r)} label=${`${common('delete')} ${r.name}`}
          confirm=${t('confirmDeleteVendor', { name: r.name })}>${common('delete')}</${ActionButton}>
      </div>`
    }
  ]
  const data = list.data
  return html`<div class="adm-stack">
    <form class="adm-toolbar" role="search" onSubmit=${search}>
      <label class="adm-grow"><span class="visually-hidden">${t('vendorKeyword')}</span>
        <input name="keyword" type="search" maxlength="64" placeholder=${t('vendorKeyword')} /></label>
      <button type="submit">${common('search')}</button>
      <button type="button" class="primary" onClick=${() => setEditing({})}>${t('addVendor')}</button>
    </form>
    <${ErrorText} error=${list.error} />
    ${data ? html`<${Table} caption=${t('tabVendors')} columns=${columns} rows=${data.items} />
      <${Pager} page=${data.page} pageSize=${data.page_size} total=${data.total} onPage=${setPage} />`
      : list.loading ? html`<p class="loading">${common('loading')}</p>` : null}
    <${Modal} open=${editing !== null} onClose=${() => closed(false)}
        title=${editing && editing.id ? t('editVendor', { name: editing.name }) : t('newVendor')}>
      ${editing ? html`<${VendorForm} key=${editing.id || 'new'} row=${editing} onDone=${closed} />` : null}
    </${Modal}>
  </div>`
}
