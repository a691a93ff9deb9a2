// API keys: create (the key shown once, to copy), limits (quota, expiry, models, IPs, rate
// limits), group, enable/disable, edit, delete, copy a key later through the reveal route.
import { useState } from 'preact/hooks'
import { html } from '../lib/html.js'
import { api } from '../lib/api.js'
import { lang, translator } from '../lib/i18n.js'
import { quotaText, timeText } from '../lib/format.js'
import { useSession } from '../lib/session.js'
import { t as common } from '../lib/strings.js'
import { ActionButton, ErrorText, Field, Modal, Page, Pager, Table, copyText, toast, useAsync } from '../lib/ui.js'

export const strings = {
  en: {
    title: 'API keys',
    add: 'New key',
    editTitle: 'Edit key',
    name: 'Name',
    status: 'Status',
    used: 'Used',
    remaining: 'Remaining',
    unlimited: 'Unlimited quota',
    quota: 'Quota (units)',
    quotaHint: '{amount} at today\'s rate.',
    group: 'Group',
    groupDefault: 'The account\'s group',
    expires: 'Expires',
    never: 'Never',
    expiresHint: 'Empty: never expires.',
    limitModels: 'Only these models',
    models: 'Models (comma-separated)',
    ips: 'Allowed IPs (one per line, CIDR allowed)',
    created: 'Created',
    createdTitle: 'Your new key',
    createdHint: 'Copy it now: it is shown once. You can copy it again later from the list.',
    copyKey: 'Copy key',
    s1: 'Enabled', s2: 'Disabled', s3: 'Expired', s4: 'Exhausted',
    searchHint: 'Name or key',
    rateLimits: 'Rate limits',
    rpm_limit: 'Requests per minute',
    tpm_limit: 'Tokens per minute',
    max_parallel_requests: 'Parallel requests',
    limitHint: 'Empty: no limit of its own.',
    limitsHint: 'A limit of the key\'s group (set by the administrator) applies too; the lower one wins.',
    limitBad: 'A whole number from 0 to {max}, or empty.',
    rpmShort: '{n}/min', tpmShort: '{n} tokens/min', parallelShort: '{n} at once',
    noLimits: 'None'
  },
  'zh-CN': {
    title: '令牌管理',
    add: '添加令牌',
    editTitle: '编辑令牌',
    name: '名称',
    status: '状态',
    used: '已用额度',
    remaining: '剩余额度',
    unlimited: '无限额度',
    quota: '额度（单位）',
    quotaHint: '按当前汇率约 {amount}。',
    group: '分组',
    groupDefault: '账户所在分组',
    expires: '过期时间',
    never: '永不过期',
    expiresHint: '留空：永不过期。',
    limitModels: '仅限以下模型',
    models: '模型（逗号分隔）',
    ips: 'IP 白名单（每行一个，可用 CIDR）',
    created: '创建时间',
    createdTitle: '新令牌',
    createdHint: '请立即复制：令牌只完整显示这一次。之后也可在列表中再次复制。',
    copyKey: '复制令牌',
    s1: '已启用', s2: '已禁用', s3: '已过期', s4: '已耗尽',
    searchHint: '名称或令牌',
    rateLimits: '速率限制',
    rpm_limit: '每分钟请求数',
    tpm_limit: '每分钟令牌数（tokens）',
    max_parallel_requests: '并发请求数',
    limitHint: '留空：不单独限制。',
    limitsHint: '令牌所在分组的限制（由管理员设置）同样生效，取较低者。',
    limitBad: '请输入 0 到 {max} 的整数，或留空。',
    rpmShort: '{n} 次/分钟', tpmShort: '{n} tokens/分钟', parallelShort: '并发 {n}',
    noLimits: '无'
  }
}
const t = translator(strings)
const PAGE_SIZE = 20
// the key API's rate limits (LiteLLM's names): whole numbers from 0 (none of its own) to a 32-bit column's top
const LIMITS = ['rpm_limit', 'tpm_limit', 'max_parallel_requests']
const MAX_LIMIT = 2147483647

/** The number to send for a limit's text (empty: 0, none), or null when the text is not one. */
function limitValue (text) {
  const s = String(text).trim()
  if (s === '') return 0
  if (!/^\d+$/.test(s)) return null
  const n = Number(s)
  return n <= MAX_LIMIT ? n : null
}

/** The server's refusals of limits ("rpm_limit: Input should be …; …"), by field, and
 *  whether the message said anything else too. */
function limitRefusals (message) {
  const found = {}
  let other = false
  for (const part of String(message || '').split('; ')) {
    const m = /^(\w+): (.+)$/.exec(part)
    if (m && LIMITS.includes(m[1])) found[m[1]] = part
    else other = true
  }
  return { found, other }
}

const numberText = n => n.toLocaleString(lang())

const limitsText = r => {
  const parts = [
    r.rpm_limit ? t('rpmShort', { n: numberText(r.rpm_limit) }) : null,
    r.tpm_limit ? t('tpmShort', { n: numberText(r.tpm_limit) }) : null,
    r.max_parallel_requests ? t('parallelShort', { n: numberText(r.max_parallel_requests) }) : null
  ].filter(Boolean)
  return parts.length ? parts.join(' · ') : t('noLimits')
}

function LimitField ({ name, value, error, onInput }) {
  const errorId = `${name}-error`
  return html`<div class="field">
    <label class="field-box"><span class="field-label">${t(name)}</span>
      <input name=${name} inputmode="numeric" autocomplete="off" placeholder="—" value=${value} onInput=${onInput}
        aria-invalid=${error ? 'true' : undefined} aria-describedby=${error ? errorId : undefined} /></label>
    ${error ? html`<small class="error" id=${errorId} role="alert">${error}</small>` : html`<small class="hint">${t('limitHint')}</small>`}
  </div>`
}

const toLocalInput = seconds => {
  if (!seconds || seconds < 0) return ''
  const d = new Date(seconds * 1000)
  return new Date(d.getTime() - d.getTimezoneOffset() * 60000).toISOString().slice(0, 16)
}

function KeyForm ({ row, groups, onDone }) {
  const { status } = useSession()
  const [error, setError] = useState(null)
  const [limitErrors, setLimitErrors] = useState({}) // a limit's refusal, by field: the form's or the server's
  // every field held here: a re-render (the quota's hint follows the typing) keeps what was typed
  const [v, setV] = useState(() => ({
    name: row?.name || '',
    unlimited_quota: !!row?.unlimited_quota,
    remain_quota: row ? row.remain_quota : 500000,
    expires: toLocalInput(row?.expired_time),
    group: row?.group || '',
    model_limits_enabled: !!row?.model_limits_enabled,
    model_limits: row?.model_limits || '',
    allow_ips: row?.allow_ips || '',
    ...Object.fromEntries(LIMITS.map(name => [name, row?.[name] ? String(row[name]) : '']))
  }))
  const set = name => e => {
    const el = e.currentTarget
    setV(old => ({ ...old, [name]: el.type === 'checkbox' ? el.checked : el.value }))
  }
  const submit = async e => {
    e.preventDefault()
    setError(null)
    const limits = Object.fromEntries(LIMITS.map(name => [name, limitValue(v[name])]))
    const bad = Object.fromEntries(LIMITS.filter(name => limits[name] === null)
      .map(name => [name, t('limitBad', { max: numberText(MAX_LIMIT) })]))
    setLimitErrors(bad)
    if (Object.keys(bad).length) return
    const body = {
      name: v.name,
      unlimited_quota: v.unlimited_quota,
      remain_quota: v.remain_quota === '' ? 0 : Number(v.remain_quota),
      expired_time: v.expires ? Math.floor(new Date(v.expires).getTime() / 1000) : -1,
      model_limits_enabled: v.model_limits_enabled,
      model_limits: v.model_limits.split(',').map(s => s.trim()).filter(Boolean).join(','),
      allow_ips: v.allow_ips.trim(),
      group: v.group,
      ...limits // 0 clears a limit (null would keep it)
    }
    try {
      const saved = row ? await api('/api/token/', { method: 'PUT', body: { ...body, id: row.id } })
        : await api('/api/token/', { method: 'POST', body })
      onDone(saved, !row)
    } catch (err) {
      // a refused limit is said on its field; anything else under the form
      const { found, other } = limitRefusals(err.message)
      setLimitErrors(found)
      if (other) setError(err)
    }
  }
  return html`<form class="form-grid" onSubmit=${submit}>
    <${Field} label=${t('name')} wide><input name="name" required maxlength="50" value=${v.name} onInput=${set('name')} /></${Field}>
    <label class="check field wide"><input type="checkbox" name="unlimited_quota" checked=${v.unlimited_quota} onChange=${set('unlimited_quota')} /> ${t('unlimited')}</label>
    <${Field} label=${t('quota')} hint=${t('quotaHint', { amount: quotaText(Number(v.remain_quota), { ...status, display_in_currency: true }) })}>
      <input name="remain_quota" type="number" min="0" max="1000000000000" step="1" value=${v.remain_quota} onInput=${set('remain_quota')} />
    </${Field}>
    <${Field} label=${t('expires')} hint=${t('expiresHint')}>
      <input name="expires" type="datetime-local" value=${v.expires} onInput=${set('expires')} />
    </${Field}>
    <${Field} label=${t('group')}>
      <select name="group" value=${v.group} onChange=${set('group')}>
        <option value="">${t('groupDefault')}</option>
        ${groups.map(g => html`<option value=${g}>${g}</option>`)}
      </select>
    </${Field}>
    <label class="check field wide"><input type="checkbox" name="model_limits_enabled" checked=${v.model_limits_enabled} onChange=${set('model_limits_enabled')} /> ${t('limitModels')}</label>
    <${Field} label=${t('models')} wide><input name="model_limits" maxlength="10000" value=${v.model_limits} onInput=${set('model_limits')} /></${Field}>
    <${Field} label=${t('ips')} wide><textarea name="allow_ips" maxlength="10000" value=${v.allow_ips} onInput=${set('allow_ips')} /></${Field}>
    <h3 class="form-section">${t('rateLimits')}</h3>
    <p class="hint form-section">${t('limitsHint')}</p>
    ${LIMITS.map(name => html`<${LimitField} key=${name} name=${name} value=${v[name]} error=${limitErrors[name]}
      onInput=${e => { set(name)(e); setLimitErrors(old => ({ ...old, [name]: undefined })) }} />`)}
    <button type="submit">${common('save')}</button>
    <${ErrorText} error=${error} />
  </form>`
}

async function copyKey (row) {
  const { key } = await api(`/api/token/${row.id}/key`, { method: 'POST' })
  await copyText(`sk-${key}`)
}

export default function Keys () {
  const { status } = useSession()
  const [page, setPage] = useState(1)
  const [keyword, setKeyword] = useState('')
  const [editing, setEditing] = useState(null) // null, 'new' or a row
  const [fresh, setFresh] = useState(null) // the new key, shown once
  const list = useAsync(() => keyword
    ? api('/api/token/search', { params: { keyword, p: page, page_size: PAGE_SIZE } })
    : api('/api/token/', { params: { p: page, page_size: PAGE_SIZE } }), [page, keyword])
  const groups = useAsync(() => api('/api/user/self/groups'), [])
  const groupNames = groups.data ? Object.keys(groups.data) : []

  const done = async (row, created) => {
    setEditing(null)
    list.reload()
    if (created) {
      const { key } = await api(`/api/token/${row.id}/key`, { method: 'POST' })
      setFresh(`sk-${key}`)
    } else toast(common('saved'))
  }
  const setStatus = async (row, value) => {
    await api('/api/token/', { method: 'PUT', params: { status_only: 1 }, body: { id: row.id, status: value } })
    list.reload()
  }
  const remove = async row => {
    await api(`/api/token/${row.id}`, { method: 'DELETE' })
    list.reload()
  }
  const columns = [
    { label: t('name'), render: r => r.name },
    { label: t('status'), render: r => html`<span class=${r.status === 1 ? 'badge on' : 'badge off'}>${t(`s${r.status}`)}</span>` },
    { label: t('used'), render: r => quotaText(r.used_quota, status) },
    { label: t('remaining'), render: r => (r.unlimited_quota ? '∞' : quotaText(r.remain_quota, status)) },
    { label: t('group'), render: r => r.group || '—' },
    { label: t('rateLimits'), render: r => limitsText(r) },
    { label: t('created'), render: r => timeText(r.created_time) },
    { label: t('expires'), render: r => (r.expired_time === -1 ? t('never') : timeText(r.expired_time)) },
    {
      label: common('actions'),
      render: r => html`<div class="row">
        <${ActionButton} action=${() => copyKey(r)} label=${`${t('copyKey')} ${r.name}`}>${t('copyKey')}</${ActionButton}>
        ${r.status === 1
          ? html`<${ActionButton} action=${() => setStatus(r, 2)}>${common('disable')}</${ActionButton}>`
          : html`<${ActionButton} action=${() => setStatus(r, 1)}>${common('enable')}</${ActionButton}>`}
        <button type="button" onClick=${() => setEditing(r)}>${common('edit')}</button>
        <${ActionButton} class="danger" confirm=${common('confirmDelete')} action=${() => remove(r)}>${common('delete')}</${ActionButton}>
      </div>`
    }
  ]
  const search = e => {
    e.preventDefault()
    setPage(1)
    setKeyword(e.currentTarget.keyword.value.trim())
  }
  return html`<${Page} title=${t('title')} actions=${html`<button type="button" class="primary" onClick=${() => setEditing('new')}>${t('add')}</button>`}>
    <form class="row" onSubmit=${search} role="search">
      <label><span class="visually-hidden">${t('searchHint')}</span><input name="keyword" placeholder=${t('searchHint')} maxlength="50" /></label>
      <button type="submit">${common('search')}</button>
    </form>
    <${ErrorText} error=${list.error} />
    ${list.data ? html`<${Table} caption=${t('title')} columns=${columns} rows=${list.data.items} />
      <${Pager} page=${page} pageSize=${PAGE_SIZE} total=${list.data.total} onPage=${setPage} />` : null}
    <${Modal} open=${editing !== null} title=${editing === 'new' ? t('add') : t('editTitle')} onClose=${() => setEditing(null)}>
      ${editing !== null ? html`<${KeyForm} row=${editing === 'new' ? null : editing} groups=${groupNames} onDone=${done} />` : null}
    </${Modal}>
    <${Modal} open=${fresh !== null} title=${t('createdTitle')} onClose=${() => setFresh(null)}>
      <p>${t('createdHint')}</p>
      <p class="secret" data-testid="new-key">${fresh}</p>
      <button type="button" class="primary" onClick=${() => copyText(fresh)}>${t('copyKey')}</button>
    </${Modal}>
  </${Page}>`
}
