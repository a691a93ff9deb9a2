// Users (admin), as new-api's user management: the list with search and paging, a new
// user, editing (name, group, quota, email, remark, password), the manage actions
// (enable / disable / promote / demote / delete) and removing a lost 2FA or passkey.
// Refusals show the server's own message.
import { useState } from 'preact/hooks'
import { html } from '../lib/html.js'
import { api } from '../lib/api.js'
import { translator } from '../lib/i18n.js'
import { t as common } from '../lib/strings.js'
import { numberText, quotaText } from '../lib/format.js'
import { ROLE_ADMIN, ROLE_ROOT, useSession } from '../lib/session.js'
import { ActionButton, ErrorText, Field, Modal, Page, Pager, Table, formValues, toast, useAsync } from '../lib/ui.js'

export const strings = {
  en: {
    title: 'Users',
    add: 'New user',
    keyword: 'Username, display name, email or ID',
    id: 'ID',
    username: 'Username',
    displayName: 'Display name',
    password: 'Password',
    passwordHint: '8 to 20 characters.',
    newPassword: 'New password',
    newPasswordHint: 'Leave empty to keep the current password (a new one signs the user out).',
    group: 'Group',
    allGroups: 'All groups',
    quota: 'Quota',
    quotaHint: 'In quota units: {money}.',
    remaining: 'Remaining',
    used: 'Used',
    requests: 'Requests',
    role: 'Role',
    status: 'Status',
    email: 'Email',
    remark: 'Remark',
    roleGuest: 'Guest',
    roleUser: 'User',
    roleAdmin: 'Admin',
    roleRoot: 'Root',
    editTitle: 'Edit user {name}',
    createTitle: 'New user',
    created: 'User {name} created',
    more: 'More',
    promote: 'Promote to admin',
    demote: 'Demote to user',
    reset2fa: 'Remove 2FA',
    resetPasskey: 'Remove passkey',
    confirm2fa: 'Remove the two-factor authentication of {name}? They will be signed out.',
    confirmPasskey: 'Remove the passkey of {name}? They will be signed out.',
    confirmDeleteUser: 'Delete user {name} and their API keys? This cannot be undone.',
    confirmDemote: 'Demote {name} to a common user?',
    confirmPromote: 'Make {name} an administrator?',
    doneEnable: '{name} is enabled',
    doneDisable: '{name} is disabled',
    donePromote: '{name} is now an administrator',
    doneDemote: '{name} is now a common user',
    doneDelete: '{name} was deleted',
    done2fa: 'The 2FA of {name} was removed',
    donePasskey: 'The passkey of {name} was removed',
    you: '(you)'
  },
  'zh-CN': {
    title: '用户管理',
    add: '添加用户',
    keyword: '用户名、显示名称、邮箱或 ID',
    id: 'ID',
    username: '用户名',
    displayName: '显示名称',
    password: '密码',
    passwordHint: '8 到 20 个字符。',
    newPassword: '新密码',
    newPasswordHint: '留空则不修改密码（设置新密码会使该用户退出登录）。',
    group: '分组',
    allGroups: '全部分组',
    quota: '额度',
    quotaHint: '以额度单位计：{money}。',
    remaining: '剩余额度',
    used: '已用额度',
    requests: '请求次数',
    role: '角色',
    status: '状态',
    email: '邮箱',
    remark: '备注',
    roleGuest: '访客',
    roleUser: '普通用户',
    roleAdmin: '管理员',
    roleRoot: '超级管理员',
    editTitle: '编辑用户 {name}',
    createTitle: '添加用户',
    created: '已创建用户 {name}',
    more: '更多',
    promote: '提升为管理员',
    demote: '降级为普通用户',
    reset2fa: '重置两步验证',
    resetPasskey: '重置 Passkey',
    confirm2fa: '确定移除 {name} 的两步验证？该用户将被强制退出登录。',
    confirmPasskey: '确定移除 {name} 的 Passkey？该用户将被强制退出登录。',
    confirmDeleteUser: '确定删除用户 {name} 及其全部令牌？此操作不可撤销。',
    confirmDemote: '确定将 {name} 降级为普通用户？',
    confirmPromote: '确定将 {name} 提升为管理员？',
    doneEnable: '已启用 {name}',
    doneDisable: '已禁用 {name}',
    donePromote: '{name} 已成为管理员',
    doneDemote: '{name} 已成为普通用户',
    doneDelete: '已删除 {name}',
    done2fa: '已移除 {name} 的两步验证',
    donePasskey: '已移除 {name} 的 Passkey',
    you: '（你）'
  }
}
const t = translator(strings)

const PAGE_SIZE = 10

export function roleText (role) {
  if (role >= ROLE_ROOT) return t('roleRoot')
  if (role >= ROLE_ADMIN) return t('roleAdmin')
  return role >= 1 ? t('roleUser') : t('roleGuest')
}

function UserForm ({ row, me, status, groups, onDone }) {
  const editing = Boolean(row.id)
  const [quota, setQuota] = useState(String(row.quota ?? 0))
  const [error, setError] = useState(null)
  const [busy, setBusy] = useState(false)
  const groupNames = [...new Set([...groups, row.group].filter(Boolean))]

  const submit = async e => {
    e.preventDefault()
    const values = formValues(e.currentTarget)
    setBusy(true)
    setError(null)
    try {
      if (editing) {
        if (!values.password) delete values.password
        await api('/api/user/', { method: 'PUT', body: { id: row.id, ...values } })
        toast(common('saved'))
      } else {
        values.role = Number(values.role)
        await api('/api/user/', { method: 'POST', body: values })
        toast(t('created', { name: values.username }))
      }
      onDone(true)
    } catch (err) {
      setError(err)
      setBusy(false)
    }
  }
  return html`<form class="form-grid" onSubmit=${submit}>
    <${Field} label=${t('username')}>
      <input name="username" required maxlength="20" autocomplete="off" defaultValue=${row.username || ''} /></${Field}>
    <${Field} label=${t('displayName')}>
      <input name="display_name" maxlength="20" autocomplete="off" defaultValue=${row.display_name || ''} /></${Field}>
    <${Field} label=${editing ? t('newPassword') : t('password')} hint=${editing ? t('newPasswordHint') : t('passwordHint')}>
      <input name="password" type="password" autocomplete="new-password" required=${!editing}
        minlength="8" maxlength="20" /></${Field}>
    ${editing ? html`
      <${Field} label=${t('group')}>
        <select name="group">
          ${groupNames.map(g => html`<option value=${g} selected=${g === row.group}>${g}</option>`)}
        </select></${Field}>
      <${Field} label=${t('quota')} hint=${t('quotaHint', { money: quotaText(Number(quota) || 0, status) })}>
        <input name="quota" type="number" step="1" value=${quota} onInput=${e => setQuota(e.currentTarget.value)} /></${Field}>
      <${Field} label=${t('email')}>
        <input name="email" type="email" maxlength="128" autocomplete="off" defaultValue=${row.email || ''} /></${Field}>`
    : html`
      <${Field} label=${t('role')}>
        <select name="role">
          <option value="1">${t('roleUser')}</option>
          ${me.role >= ROLE_ROOT ? html`<option value="10">${t('roleAdmin')}</option>` : null}
        </select></${Field}>`}
    <${Field} label=${t('remark')} wide>
      <input name="remark" maxlength="255" autocomplete="off" defaultValue=${row.remark || ''} /></${Field}>
    <div class="row">
      <button type="submit" disabled=${busy}>${editing ? common('save') : common('create')}</button>
      <button type="button" onClick=${() => onDone(false)}>${common('cancel')}</button>
    </div>
    <div class="field wide"><${ErrorText} error=${error} /></div>
  </form>`
}

export default function Users () {
  const { status, user: me } = useSession()
  const [page, setPage] = useState(1)
  const [filter, setFilter] = useState({ keyword: '', group: '' })
  const [editing, setEditing] = useState(null) // the user in the dialog; {} for a new one
  const list = useAsync(() => api(filter.keyword || filter.group ? '/api/user/search' : '/api/user/',
    { params: { ...filter, p: page, page_size: PAGE_SIZE } }), [page, filter])
  const groups = useAsync(() => api('/api/group/'), [])

  const search = e => {
    e.preventDefault()
    const f = e.currentTarget
    setFilter({ keyword: f.keyword.value.trim(), group: f.group.value })
    setPage(1)
  }
  const manage = (row, action, done) => async () => {
    await api('/api/user/manage', { method: 'POST', body: { id: row.id, action } })
    toast(t(done, { name: row.username }))
    list.reload()
  }
  const resetFactor = (row, path, done) => async () => {
    await api(`/api/user/${row.id}/${path}`, { method: 'DELETE' })
    toast(t(done, { name: row.username }))
  }
  const closed = changed => {
    setEditing(null)
    if (changed) list.reload()
  }

  const actions = row => {
    const name = row.username
    const act = (label, run, question, cls) => html`<${ActionButton} action=${run} confirm=${question}
      class=${cls} label=${`${label} ${name}`}>${label}</${ActionButton}>`
    return html`<div class="row adm-nowrap">
      <button type="button" aria-label=${`${common('edit')} ${name}`} onClick=${() => setEditing(row)}>${common('edit')}</button>
      ${row.status === 1 ? act(common('disable'), manage(row, 'disable', 'doneDisable'))
        : act(common('enable'), manage(row, 'enable', 'doneEnable'))}
      <details class="adm-more">
        <summary aria-label=${`${t('more')} ${name}`}>${t('more')}</summary>
        <div class="adm-more-list">
          ${me.role >= ROLE_ROOT && row.role < ROLE_ADMIN
            ? act(t('promote'), manage(row, 'promote', 'donePromote'), t('confirmPromote', { name })) : null}
          ${row.role >= ROLE_ADMIN && row.role < ROLE_ROOT
            ? act(t('demote'), manage(row, 'demote', 'doneDemote'), t('confirmDemote', { name })) : null}
          ${act(t('reset2fa'), resetFactor(row, '2fa', 'done2fa'), t('confirm2fa', { name }))}
          ${act(t('resetPasskey'), resetFactor(row, 'reset_passkey', 'donePasskey'), t('confirmPasskey', { name }))}
          ${act(common('delete'), manage(row, 'delete', 'doneDelete'), t('confirmDeleteUser', { name }), 'danger')}
        </div>
      </details>
    </div>`
  }
  const columns = [
    { label: t('id'), key: 'id' },
    {
      label: t('username'),
      render: r => html`<strong>${r.username}</strong>${r.id === me.id ? ` ${t('you')}` : ''}
        ${r.display_name && r.display_name !== r.username ? html`<br /><span class="muted">${r.display_name}</span>` : null}
        ${r.email ? html`<br /><span class="muted">${r.email}</span>` : null}`
    },
    { label: t('group'), key: 'group' },
    {
      label: t('quota'),
      render: r => html`<span class="adm-nowrap">${t('remaining')}: ${quotaText(r.quota, status)}</span><br />
        <span class="muted adm-nowrap">${t('used')}: ${quotaText(r.used_quota, status)}</span>`
    },
    { label: t('requests'), render: r => numberText(r.request_count) },
    { label: t('role'), render: r => roleText(r.role) },
    {
      label: t('status'),
      render: r => html`<span class=${r.status === 1 ? 'badge on' : 'badge off'}>
        ${r.status === 1 ? common('enabled') : common('disabled')}</span>`
    },
    { label: t('remark'), key: 'remark' },
    { label: common('actions'), render: actions }
  ]
  const data = list.data
  return html`<${Page} title=${t('title')}
      actions=${html`<button type="button" class="primary" onClick=${() => setEditing({})}>${t('add')}</button>`}>
    <form class="adm-toolbar" role="search" onSubmit=${search}>
      <label class="adm-grow"><span class="visually-hidden">${t('keyword')}</span>
        <input name="keyword" type="search" maxlength="64" placeholder=${t('keyword')} /></label>
      <label><span class="visually-hidden">${t('group')}</span>
        <select name="group">
          <option value="">${t('allGroups')}</option>
          ${(groups.data || []).map(g => html`<option value=${g}>${g}</option>`)}
        </select></label>
      <button type="submit">${common('search')}</button>
    </form>
    <${ErrorText} error=${list.error} />
    ${data ? html`<${Table} caption=${t('title')} columns=${columns} rows=${data.items} />
      <${Pager} page=${data.page} pageSize=${data.page_size} total=${data.total} onPage=${setPage} />`
      : list.loading ? html`<p class="loading">${common('loading')}</p>` : null}
    <${Modal} open=${editing !== null} onClose=${() => closed(false)}
        title=${editing && editing.id ? t('editTitle', { name: editing.username }) : t('createTitle')}>
      ${editing ? html`<${UserForm} key=${editing.id || 'new'} row=${editing} me=${me} status=${status}
        groups=${groups.data || []} onDone=${closed} />` : null}
    </${Modal}>
  </${Page}>`
}
