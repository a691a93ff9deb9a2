// Redemption codes (admin), as new-api's: the list with search and paging, creating a
// batch (the new codes shown once, to copy or save as a text file), enabling and
// disabling, deleting one code or every used, disabled and expired one.
import { useState } from 'preact/hooks'
import { html } from '../lib/html.js'
import { api, saveBlob } from '../lib/api.js'
import { translator } from '../lib/i18n.js'
import { t as common } from '../lib/strings.js'
import { quotaText, timeText } from '../lib/format.js'
import { useSession } from '../lib/session.js'
import { ActionButton, CopyButton, ErrorText, Field, Modal, Page, Pager, Table, formValues, toast, useAsync } from '../lib/ui.js'

export const strings = {
  en: {
    title: 'Redemption codes',
    add: 'New codes',
    deleteInvalid: 'Delete invalid codes',
    confirmInvalid: 'Delete every used, disabled and expired code?',
    deletedInvalid: '{count} codes deleted',
    keyword: 'Name or ID',
    id: 'ID',
    name: 'Name',
    nameHint: 'Up to 20 characters; the same for the whole batch.',
    key: 'Code',
    status: 'Status',
    used: 'Used',
    quota: 'Quota',
    quotaHint: 'In quota units: {money} each.',
    count: 'How many',
    countHint: 'From 1 to 100.',
    created: 'Created',
    expires: 'Expires',
    expiresHint: 'Empty: never.',
    never: 'Never',
    expired: 'Expired',
    redeemedBy: 'Redeemed by',
    createTitle: 'New redemption codes',
    editTitle: 'Edit code #{id}',
    resultTitle: 'The new codes',
    resultNote: '{count} codes created. Copy or save them now; they also stay in the list.',
    copyAll: 'Copy all',
    download: 'Save as a text file',
    done: 'Done',
    confirmDeleteCode: 'Delete the code {name} (#{id})?',
    doneEnable: 'Code #{id} enabled',
    doneDisable: 'Code #{id} disabled',
    doneDelete: 'Code #{id} deleted'
  },
  'zh-CN': {
    title: '兑换码管理',
    add: '添加兑换码',
    deleteInvalid: '清除失效兑换码',
    confirmInvalid: '确定删除所有已使用、已禁用和已过期的兑换码？',
    deletedInvalid: '已删除 {count} 个兑换码',
    keyword: '名称或 ID',
    id: 'ID',
    name: '名称',
    nameHint: '最多 20 个字符，同一批次共用。',
    key: '兑换码',
    status: '状态',
    used: '已使用',
    quota: '额度',
    quotaHint: '以额度单位计：每个 {money}。',
    count: '生成数量',
    countHint: '1 到 100 个。',
    created: '创建时间',
    expires: '过期时间',
    expiresHint: '留空表示永不过期。',
    never: '永不过期',
    expired: '已过期',
    redeemedBy: '兑换人',
    createTitle: '添加兑换码',
    editTitle: '编辑兑换码 #{id}',
    resultTitle: '新的兑换码',
    resultNote: '已创建 {count} 个兑换码。请立即复制或保存；它们也会保留在列表中。',
    copyAll: '全部复制',
    download: '保存为文本文件',
    done: '完成',
    confirmDeleteCode: '确定删除兑换码 {name}（#{id}）？',
    doneEnable: '已启用兑换码 #{id}',
    doneDisable: '已禁用兑换码 #{id}',
    doneDelete: '已删除兑换码 #{id}'
  }
}
const t = translator(strings)

const PAGE_SIZE = 10
const ENABLED = 1
const DISABLED = 2
const USED = 3

const saveText = (text, filename) => saveBlob(new Blob([text], { type: 'text/plain;charset=utf-8' }), filename)

const toLocalInput = seconds => {
  if (!seconds) return ''
  const d = new Date(seconds * 1000)
  return new Date(d.getTime() - d.getTimezoneOffset() * 60000).toISOString().slice(0, 16)
}

/** A new batch, or (with `row`) an existing code's name, quota and expiry. */
function CodeForm ({ status, row, onCreated, onSaved, onCancel }) {
  const [quota, setQuota] = useState(String(row ? row.quota : status.quota_per_unit || 500000))
  const [error, setError] = useState(null)
  const [busy, setBusy] = useState(false)
  const submit = async e => {
    e.preventDefault()
    const v = formValues(e.currentTarget)
    const expires = v.expires ? Math.floor(new Date(v.expires).getTime() / 1000) : 0
    setBusy(true)
    setError(null)
    try {
      if (row) {
        await api('/api/redemption/', { method: 'PUT', body: { id: row.id, name: v.name, quota: v.quota, expired_time: expires } })
        onSaved()
      } else {
        const keys = await api('/api/redemption/', {
          method: 'POST', body: { name: v.name, quota: v.quota, count: v.count, expired_time: expires }
        })
        onCreated({ name: v.name, keys: keys || [] })
      }
    } catch (err) {
      setError(err)
      setBusy(false)
    }
  }
  return html`<form class="form-grid" onSubmit=${submit}>
    <${Field} label=${t('name')} hint=${t('nameHint')} wide>
      <input name="name" required maxlength="20" autocomplete="off" defaultValue=${row?.name || ''} /></${Field}>
    <${Field} label=${t('quota')} hint=${t('quotaHint', { money: quotaText(Number(quota) || 0, status) })}>
      <input name="quota" type="number" required min="1" step="1" value=${quota}
        onInput=${e => setQuota(e.currentTarget.value)} /></${Field}>
    ${row ? null : html`<${Field} label=${t('count')} hint=${t('countHint')}>
      <input name="count" type="number" required min="1" max="100" step="1" defaultValue="1" /></${Field}>`}
    <${Field} label=${t('expires')} hint=${t('expiresHint')}>
      <input name="expires" type="datetime-local" defaultValue=${toLocalInput(row?.expired_time)} /></${Field}>
    <div class="row">
      <button type="submit" disabled=${busy}>${row ? common('save') : common('create')}</button>
      <button type="button" onClick=${onCancel}>${common('cancel')}</button>
    </div>
    <div class="field wide"><${ErrorText} error=${error} /></div>
  </form>`
}

function Created ({ batch, onDone }) {
  const text = batch.keys.join('\n')
  const save = () => saveText(text + '\n', `redemption-codes-${batch.name.replace(/[^\w.-]+/g, '_') || 'batch'}.txt`)
  return html`<div class="adm-stack">
    <p role="status">${t('resultNote', { count: batch.keys.length })}</p>
    <label class="field"><span class="field-label">${t('resultTitle')}</span>
      <textarea class="adm-codes" readonly rows=${Math.min(10, Math.max(3, batch.keys.length))} value=${text} /></label>
    <div class="row">
      <${CopyButton} text=${text} label=${t('copyAll')} />
      <button type="button" onClick=${save}>${t('download')}</button>
      <button type="button" class="primary" onClick=${onDone}>${t('done')}</button>
    </div>
  </div>`
}

export default function Redemptions () {
  const { status } = useSession()
  const [page, setPage] = useState(1)
  const [keyword, setKeyword] = useState('')
  const [dialog, setDialog] = useState(null) // null, 'create', {edit: row} or the created batch
  const list = useAsync(() => api(keyword ? '/api/redemption/search' : '/api/redemption/',
    { params: { keyword, p: page, page_size: PAGE_SIZE } }), [page, keyword])

  const search = e => {
    e.preventDefault()
    setKeyword(e.currentTarget.keyword.value.trim())
    setPage(1)
  }
  const setStatus = (row, value, done) => async () => {
    await api('/api/redemption/', { method: 'PUT', params: { status_only: 1 }, body: { id: row.id, status: value } })
    toast(t(done, { id: row.id }))
    list.reload()
  }
  const remove = row => async () => {
    await api(`/api/redemption/${row.id}`, { method: 'DELETE' })
    toast(t('doneDelete', { id: row.id }))
    list.reload()
  }
  const deleteInvalid = async () => {
    const count = await api('/api/redemption/invalid', { method: 'DELETE' })
    toast(t('deletedInvalid', { count: count || 0 }))
    list.reload()
  }
  const close = () => {
    if (dialog && dialog !== 'create' && !dialog.edit) list.reload()
    setDialog(null)
  }

  const now = Date.now() / 1000
  const statusBadge = r => {
    if (r.status === USED) return html`<span class="badge">${t('used')}</span>`
    if (r.status === DISABLED) return html`<span class="badge off">${common('disabled')}</span>`
    if (r.expired_time && r.expired_time < now) return html`<span class="badge off">${t('expired')}</span>`
    return html`<span class="badge on">${common('enabled')}</span>`
  }
  const actions = r => {
    const label = text => `${text} #${r.id}`
    return html`<div class="row adm-nowrap">
      <${CopyButton} text=${r.key} />
      ${r.status !== USED ? html`<button type="button" aria-label=${label(common('edit'))}
          onClick=${() => setDialog({ edit: r })}>${common('edit')}</button>` : null}
      ${r.status === ENABLED ? html`<${ActionButton} action=${setStatus(r, DISABLED, 'doneDisable')}
          label=${label(common('disable'))}>${common('disable')}</${ActionButton}>` : null}
      ${r.status === DISABLED ? html`<${ActionButton} action=${setStatus(r, ENABLED, 'doneEnable')}
          label=${label(common('enable'))}>${common('enable')}</${ActionButton}>` : null}
      <${ActionButton} class="danger" action=${remove(r)} label=${label(common('delete'))}
        confirm=${t('confirmDeleteCode', { name: r.name, id: r.id })}>${common('delete')}</${ActionButton}>
    </div>`
  }
  const columns = [
    { label: t('id'), key: 'id' },
    { label: t('name'), key: 'name' },
    { label: t('key'), render: r => html`<code class="adm-code-key">${r.key}</code>` },
    { label: t('status'), render: statusBadge },
    { label: t('quota'), render: r => quotaText(r.quota, status) },
    { label: t('created'), render: r => timeText(r.created_time) },
    { label: t('expires'), render: r => (r.expired_time ? timeText(r.expired_time) : t('never')) },
    { label: t('redeemedBy'), render: r => (r.used_user_id ? `#${r.used_user_id} · ${timeText(r.redeemed_time)}` : '—') },
    { label: common('actions'), render: actions }
  ]
  const data = list.data
  const creating = dialog === 'create'
  const editing = dialog?.edit
  const dialogTitle = creating ? t('createTitle') : editing ? t('editTitle', { id: editing.id }) : t('resultTitle')
  return html`<${Page} title=${t('title')} actions=${html`
      <button type="button" class="primary" onClick=${() => setDialog('create')}>${t('add')}</button>
      <${ActionButton} class="danger" action=${deleteInvalid} confirm=${t('confirmInvalid')}>${t('deleteInvalid')}</${ActionButton}>`}>
    <form class="adm-toolbar" role="search" onSubmit=${search}>
      <label class="adm-grow"><span class="visually-hidden">${t('keyword')}</span>
        <input name="keyword" type="search" maxlength="64" placeholder=${t('keyword')} /></label>
      <button type="submit">${common('search')}</button>
    </form>
    <${ErrorText} error=${list.error} />
    ${data ? html`<${Table} caption=${t('title')} columns=${columns} rows=${data.items} />
      <${Pager} page=${data.page} pageSize=${data.page_size} total=${data.total} onPage=${setPage} />`
      : list.loading ? html`<p class="loading">${common('loading')}</p>` : null}
    <${Modal} open=${dialog !== null} onClose=${close} title=${dialogTitle}>
      ${creating ? html`<${CodeForm} status=${status} onCancel=${close}
          onCreated=${batch => setDialog(batch)} />` : null}
      ${editing ? html`<${CodeForm} status=${status} row=${editing} onCancel=${close}
          onSaved=${() => { toast(common('saved')); setDialog(null); list.reload() }} />` : null}
      ${dialog && !creating && !editing ? html`<${Created} batch=${dialog} onDone=${close} />` : null}
    </${Modal}>
  </${Page}>`
}
