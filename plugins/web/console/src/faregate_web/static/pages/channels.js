// Channels (admin), as new-api's 渠道管理: the list with paging, search and filters; add and
// edit in a dialog; enable, disable, copy, delete; test one (with a model) or all (with
// progress); balances; inline priority and weight; tags; the keys of a multi-key channel.
import { useState } from 'preact/hooks'
import { html } from '../lib/html.js'
import { api } from '../lib/api.js'
import { t as common } from '../lib/strings.js'
import { timeText } from '../lib/format.js'
import { ActionButton, ErrorText, Field, Modal, Page, Pager, Table, toast, useAsync } from '../lib/ui.js'
import { t } from './channels/strings.js'
import { ENABLED, multiKey, secondsText, splitList, statusBadge, statusText, typeName } from './channels/util.js'
import { ChannelForm } from './channels/form.js'
import { BalancesPanel, KeysDialog, TagTools, TestAllPanel, TestDialog } from './channels/tools.js'

export { strings } from './channels/strings.js'

const SIZES = [10, 20, 50, 100]
const NO_SEARCH = { keyword: '', group: '', model: '' }

function Models ({ text }) {
  const list = splitList(text)
  if (list.length <= 2) return html`<span class="ch-models">${list.join(', ') || '—'}</span>`
  return html`<details class="ch-models">
    <summary>${t('modelsShort', { first: list.slice(0, 2).join(', '), more: list.length - 2 })}</summary>
    <span>${list.join(', ')}</span>
  </details>`
}

/** A number cell saved when it changes (Enter or leaving it). */
function InlineNumber ({ row, name, label, onSaved }) {
  const [text, setText] = useState(String(row[name]))
  const save = async e => {
    const raw = e.currentTarget.value
    const value = Number(raw)
    if (raw === '' || !Number.isInteger(value) || value === row[name]) {
      setText(String(row[name]))
      return
    }
    try {
      await api('/api/channel/', { method: 'PUT', body: { id: row.id, [name]: value } })
      toast(t('savedField', { field: label, name: row.name }))
      onSaved()
    } catch (err) {
      setText(String(row[name]))
      toast(common('error', { message: err.message }), 'bad')
    }
  }
  return html`<label class="ch-num">
    <span class="visually-hidden">${t('fieldOf', { field: label, name: row.name })}</span>
    <input type="number" name=${name} step="1" min=${name === 'weight' ? 0 : undefined} value=${text}
      onInput=${e => setText(e.currentTarget.value)} onChange=${save}
      onKeyDown=${e => { if (e.key === 'Enter') e.currentTarget.blur() }} />
  </label>`
}

function KeyInfo ({ row, onKeys }) {
  const keys = multiKey(row)
  if (!keys) return null
  return html`<button type="button" class="link ch-keys" onClick=${() => onKeys(row)}
    aria-label=${t('keysOf', { name: row.name })}>${t('multiKeyBadge', { size: keys.size, disabled: keys.disabled })}</button>`
}

function Filters ({ types, typeCounts, filter, setFilter, groups }) {
  const [draft, setDraft] = useState(filter.search)
  const searching = Object.values(filter.search).some(Boolean)
  const submit = e => {
    e.preventDefault()
    setFilter({ ...filter, page: 1, search: { ...draft } })
  }
  const clear = () => {
    setDraft(NO_SEARCH)
    setFilter({ ...filter, page: 1, search: NO_SEARCH })
  }
  const set = (name, value) => setFilter({ ...filter, page: 1, [name]: value })
  return html`<div class="panel">
    <form class="form-grid" role="search" onSubmit=${submit}>
      <${Field} label=${t('keyword')}>
        <input name="keyword" type="search" maxlength="128" value=${draft.keyword} placeholder=${t('keywordHint')}
          onInput=${e => setDraft({ ...draft, keyword: e.currentTarget.value })} /></${Field}>
      <${Field} label=${t('group')}>
        <select name="group" value=${draft.group} onChange=${e => setDraft({ ...draft, group: e.currentTarget.value })}>
          <option value="">${t('any')}</option>
          ${(groups || []).map(g => html`<option value=${g}>${g}</option>`)}
        </select></${Field}>
      <${Field} label=${t('model')}>
        <input name="model" maxlength="255" value=${draft.model}
          onInput=${e => setDraft({ ...draft, model: e.currentTarget.value })} /></${Field}>
      <div class="row">
        <button type="submit">${common('search')}</button>
        ${searching ? html`<button type="button" onClick=${clear}>${t('clearSearch')}</button>` : null}
      </div>
      <${Field} label=${t('type')}>
        <select name="type-filter" value=${filter.type} disabled=${searching} onChange=${e => set('type', e.currentTarget.value)}>
          <option value="">${t('allTypes')}</option>
          ${(types || []).map(x => html`<option value=${String(x.type)}>
            ${typeName(x.type, types)}${typeCounts && typeCounts[x.type] ? ` (${typeCounts[x.type]})` : ''}</option>`)}
        </select></${Field}>
      <${Field} label=${t('status')}>
        <select name="status-filter" value=${filter.status} disabled=${searching} onChange=${e => set('status', e.currentTarget.value)}>
          <option value="">${t('allStatuses')}</option>
          <option value="enabled">${common('enabled')}</option>
          <option value="disabled">${common('disabled')}</option>
        </select></${Field}>
      <${Field} label=${t('pageSize')}>
        <select name="page-size" value=${String(filter.size)} onChange=${e => set('size', Number(e.currentTarget.value))}>
          ${SIZES.map(n => html`<option value=${String(n)}>${n}</option>`)}
        </select></${Field}>
      <label class="check field"><input type="checkbox" name="id_sort" checked=${filter.idSort} disabled=${searching}
        onChange=${e => set('idSort', e.currentTarget.checked)} /> ${t('idSort')}</label>
    </form>
    ${searching ? html`<p class="hint">${t('searchNote')}</p>` : null}
  </div>`
}

export default function Channels () {
  const [filter, setFilter] = useState({ page: 1, size: 20, type: '', status: '', idSort: false, search: NO_SEARCH })
  const [editing, setEditing] = useState(null) // null, {} (new) or a channel
  const [testing, setTesting] = useState(null)
  const [keysOf, setKeysOf] = useState(null)
  const [testAll, setTestAll] = useState(false)
  const types = useAsync(() => api('/api/channel/types'), [])
  const groups = useAsync(() => api('/api/group/'), [])
  const searching = Object.values(filter.search).some(Boolean)
  const list = useAsync(() => searching
    ? api('/api/channel/search', { params: { ...filter.search, p: filter.page, page_size: filter.size } })
    : api('/api/channel/', {
      params: { p: filter.page, page_size: filter.size, type: filter.type, status: filter.status, id_sort: filter.idSort || undefined }
    }), [JSON.stringify(filter)])
  const reload = () => list.reload()
  const data = list.data
  const typeList = types.data || []

  const setStatus = async (row, status) => {
    await api('/api/channel/', { method: 'PUT', body: { id: row.id, status } })
    toast(status === ENABLED ? t('enabledOne', { name: row.name }) : t('disabledOne', { name: row.name }))
    reload()
  }
  const copy = async row => {
    const made = await api(`/api/channel/copy/${row.id}`, { method: 'POST' })
    toast(t('copiedAs', { id: made.id }))
    reload()
  }
  const remove = async row => {
    await api(`/api/channel/${row.id}`, { method: 'DELETE' })
    toast(t('deleted', { name: row.name }))
    reload()
  }
  const balance = async row => {
    const got = await api(`/api/channel/update_balance/${row.id}`)
    toast(t('balanceIs', { name: row.name, balance: Number(got.balance).toFixed(2) }))
    reload()
  }
  const deleteDisabled = async () => {
    const n = await api('/api/channel/disabled', { method: 'DELETE' })
    toast(t('deletedDisabled', { count: n }))
    reload()
  }

  const columns = [
    { label: t('id'), key: 'id' },
    {
      label: t('name'),
      render: r => html`<strong>${r.name}</strong>${r.remark ? html`<br /><small class="muted">${r.remark}</small>` : null}
        ${multiKey(r) ? html`<br /><${KeyInfo} row=${r} onKeys=${setKeysOf} />` : null}`
    },
    { label: t('type'), render: r => typeName(r.type, typeList) },
    { label: t('status'), render: r => html`<span class=${`${statusBadge(r.status)} ch-nowrap`}>${statusText(r.status)}</span>` },
    { label: t('group'), render: r => splitList(r.group).join(', ') || 'default' },
    { label: t('models'), render: r => html`<${Models} text=${r.models} />` },
    { label: t('priority'), render: r => html`<${InlineNumber} key=${`p${r.id}:${r.priority}`} row=${r} name="priority" label=${t('priority')} onSaved=${reload} />` },
    { label: t('weight'), render: r => html`<${InlineNumber} key=${`w${r.id}:${r.weight}`} row=${r} name="weight" label=${t('weight')} onSaved=${reload} />` },
    {
      label: t('balance'),
      render: r => html`<span title=${r.balance_updated_time ? timeText(r.balance_updated_time) : ''}>
        ${r.balance_updated_time ? `$${Number(r.balance || 0).toFixed(2)}` : '—'}</span>`
    },
    { label: t('responseTime'), render: r => html`<span class=${r.response_time > 5000 ? 'error' : ''}>${secondsText(r.response_time)}</span>` },
    { label: t('tag'), render: r => r.tag || '' },
    {
      label: common('actions'),
      render: r => html`<div class="ch-actions">
        <button type="button" onClick=${() => setTesting(r)} aria-label=${t('testOf', { name: r.name })}>${t('test')}</button>
        ${r.status === ENABLED
          ? html`<${ActionButton} action=${() => setStatus(r, 2)} label=${t('disableOf', { name: r.name })}>${common('disable')}</${ActionButton}>`
          : html`<${ActionButton} action=${() => setStatus(r, ENABLED)} label=${t('enableOf', { name: r.name })}>${common('enable')}</${ActionButton}>`}
        <button type="button" onClick=${() => setEditing(r)} aria-label=${t('editOf', { name: r.name })}>${common('edit')}</button>
        <${ActionButton} action=${() => copy(r)} label=${t('copyOf', { name: r.name })}>${common('copy')}</${ActionButton}>
        <${ActionButton} action=${() => balance(r)} label=${t('balanceOf', { name: r.name })}>${t('updateBalance')}</${ActionButton}>
        <${ActionButton} class="danger" action=${() => remove(r)} confirm=${t('confirmDeleteOne', { name: r.name })}
          label=${t('deleteOf', { name: r.name })}>${common('delete')}</${ActionButton}>
      </div>`
    }
  ]

  const actions = html`
    <button type="button" class="primary" onClick=${() => setEditing({})}>${t('add')}</button>
    <button type="button" onClick=${() => setTestAll(true)}>${t('testAll')}</button>
    <button type="button" onClick=${reload}>${common('refresh')}</button>
    <${ActionButton} class="danger" action=${deleteDisabled} confirm=${t('confirmDeleteDisabled')}>${t('deleteDisabled')}</${ActionButton}>`

  return html`<${Page} title=${t('title')} actions=${actions}>
    <${Filters} key=${JSON.stringify(filter.search)} types=${typeList} typeCounts=${data?.type_counts} filter=${filter} setFilter=${setFilter} groups=${groups.data} />
    ${testAll ? html`<${TestAllPanel} onDone=${reload} onClose=${() => setTestAll(false)} />` : null}
    <div class="panel ch-tools">
      <${BalancesPanel} onDone=${reload} />
      <${TagTools} onDone=${reload} onShow=${tag => setFilter({ ...filter, page: 1, search: { ...NO_SEARCH, keyword: tag } })} />
    </div>
    <${ErrorText} error=${list.error || types.error} />
    ${list.loading && !data ? html`<p class="loading">${common('loading')}</p>` : null}
    ${data ? html`<div class="ch-table"><${Table} caption=${t('title')} columns=${columns} rows=${data.items} /></div>
      <${Pager} page=${data.page} pageSize=${data.page_size} total=${data.total} onPage=${p => setFilter({ ...filter, page: p })} />` : null}
    <${Modal} open=${editing !== null} wide title=${editing && editing.id ? t('editTitle', { name: editing.name }) : t('addTitle')}
      onClose=${() => setEditing(null)}>
      ${editing !== null ? html`<${ChannelForm} key=${editing.id || 'new'} channel=${editing.id ? editing : null} types=${typeList}
        groups=${groups.data || []} onSaved=${() => { setEditing(null); reload() }} onCancel=${() => setEditing(null)} />` : null}
    </${Modal}>
    <${Modal} open=${testing !== null} title=${testing ? t('testTitle', { name: testing.name }) : ''} onClose=${() => { setTesting(null); reload() }}>
      ${testing ? html`<${TestDialog} key=${testing.id} channel=${testing} />` : null}
    </${Modal}>
    <${Modal} open=${keysOf !== null} wide title=${keysOf ? t('keysTitle', { name: keysOf.name }) : ''} onClose=${() => { setKeysOf(null); reload() }}>
      ${keysOf ? html`<${KeysDialog} key=${keysOf.id} channel=${keysOf} />` : null}
    </${Modal}>
  </${Page}>`
}
