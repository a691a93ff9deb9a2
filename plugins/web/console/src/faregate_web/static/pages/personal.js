// Personal settings: the profile, display name and password (PUT /api/user/self), the
// management API's access token (GET /api/user/token, shown once), notifications
// (personal/notify.js), linked outside accounts (personal/bindings.js), 2FA and the passkey
// (personal/security.js, shown when their plugins are installed) and deleting the account.
import { useState } from 'preact/hooks'
import { useLocation } from 'preact-iso/router'
import { html } from '../lib/html.js'
import { api, rememberUser } from '../lib/api.js'
import { translator } from '../lib/i18n.js'
import { quotaText } from '../lib/format.js'
import { ROLE_ADMIN, ROLE_ROOT, useSession } from '../lib/session.js'
import { t as common } from '../lib/strings.js'
import { ActionButton, CopyButton, ErrorText, Field, Modal, Page, toast, useAsync } from '../lib/ui.js'
import { Bindings } from './personal/bindings.js'
import { Notifications } from './personal/notify.js'
import { Security } from './personal/security.js'

export const strings = {
  en: {
    title: 'Personal settings',
    profile: 'Profile',
    username: 'Username',
    displayName: 'Display name',
    email: 'Email',
    group: 'Group',
    role: 'Role',
    quota: 'Balance',
    roleUser: 'User',
    roleAdmin: 'Administrator',
    roleRoot: 'Root',
    none: '—',
    nameSaved: 'Display name saved.',
    passwordTitle: 'Change the password',
    oldPassword: 'Current password',
    newPassword: 'New password',
    newPassword2: 'Repeat the new password',
    passwordHint: '8 to 64 characters.',
    mismatch: 'The two passwords differ.',
    changePassword: 'Change the password',
    passwordSaved: 'Password changed. Your other sessions have ended.',
    tokenTitle: 'Access token',
    tokenHint: 'For scripts calling the management API: send it as the Authorization header with New-Api-User: {id}. A new token replaces the previous one.',
    generate: 'Generate an access token',
    confirmGenerate: 'Make a new access token? The previous one stops working.',
    tokenShown: 'Your access token: copy it now, it is shown once.',
    copyToken: 'Copy the token',
    danger: 'Delete the account',
    deleteHint: 'Your account, API keys and balance are deleted for good.',
    deleteAccount: 'Delete my account',
    confirmDeleteTitle: 'Delete your account?',
    typeName: 'Type your username ({name}) to confirm',
    deleted: 'Your account has been deleted.'
  },
  'zh-CN': {
    title: '个人设置',
    profile: '个人信息',
    username: '用户名',
    displayName: '显示名称',
    email: '邮箱',
    group: '分组',
    role: '角色',
    quota: '当前余额',
    roleUser: '普通用户',
    roleAdmin: '管理员',
    roleRoot: '超级管理员',
    none: '—',
    nameSaved: '显示名称已保存。',
    passwordTitle: '修改密码',
    oldPassword: '当前密码',
    newPassword: '新密码',
    newPassword2: '确认新密码',
    passwordHint: '8 到 64 个字符。',
    mismatch: '两次输入的密码不一致。',
    changePassword: '修改密码',
    passwordSaved: '密码已修改，其他会话已退出。',
    tokenTitle: '系统访问令牌',
    tokenHint: '供脚本调用管理 API：放在 Authorization 请求头中，并带上 New-Api-User: {id}。生成新令牌后旧令牌失效。',
    generate: '生成系统访问令牌',
    confirmGenerate: '生成新的访问令牌？旧令牌将失效。',
    tokenShown: '你的访问令牌：请立即复制，只显示这一次。',
    copyToken: '复制令牌',
    danger: '删除账户',
    deleteHint: '账户、API 令牌和余额将被永久删除。',
    deleteAccount: '删除我的账户',
    confirmDeleteTitle: '确定删除账户？',
    typeName: '输入你的用户名（{name}）以确认',
    deleted: '账户已删除。'
  }
}
const t = translator(strings)

const roleName = role => (role >= ROLE_ROOT ? t('roleRoot') : role >= ROLE_ADMIN ? t('roleAdmin') : t('roleUser'))

function Profile ({ me, onSaved }) {
  const { status } = useSession()
  const [error, setError] = useState(null)
  const [busy, setBusy] = useState(false)
  const submit = async e => {
    e.preventDefault()
    setBusy(true)
    setError(null)
    try {
      await api('/api/user/self', { method: 'PUT', body: { display_name: e.currentTarget.display_name.value.trim() } })
      toast(t('nameSaved'))
      onSaved()
    } catch (err) { setError(err) } finally { setBusy(false) }
  }
  return html`<section class="panel acct" aria-labelledby="profile-h">
    <h2 id="profile-h">${t('profile')}</h2>
    <dl class="facts">
      <dt>${t('username')}</dt><dd>${me.username}</dd>
      <dt>${t('displayName')}</dt><dd data-testid="display-name">${me.display_name || t('none')}</dd>
      <dt>${t('email')}</dt><dd>${me.email || t('none')}</dd>
      <dt>${t('group')}</dt><dd>${me.group}</dd>
      <dt>${t('role')}</dt><dd>${roleName(me.role)}</dd>
      <dt>${t('quota')}</dt><dd>${quotaText(me.quota, status)}</dd>
    </dl>
    <form class="inline-form" onSubmit=${submit}>
      <${Field} label=${t('displayName')}><input name="display_name" value=${me.display_name || ''} maxlength="20" required /></${Field}>
      <button type="submit" disabled=${busy}>${common('save')}</button>
    </form>
    <${ErrorText} error=${error} />
  </section>`
}

function Password () {
  const [error, setError] = useState(null)
  const [busy, setBusy] = useState(false)
  const submit = async e => {
    e.preventDefault()
    const f = e.currentTarget
    if (f.password.value !== f.password2.value) return setError(new Error(t('mismatch')))
    setBusy(true)
    setError(null)
    try {
      await api('/api/user/self', { method: 'PUT', body: { original_password: f.original_password.value, password: f.password.value } })
      toast(t('passwordSaved'))
      f.reset()
    } catch (err) { setError(err) } finally { setBusy(false) }
  }
  return html`<section class="panel acct" aria-labelledby="password-h">
    <h2 id="password-h">${t('passwordTitle')}</h2>
    <form class="form-grid" onSubmit=${submit}>
      <${Field} label=${t('oldPassword')}><input type="password" name="original_password" autocomplete="current-password" required maxlength="128" /></${Field}>
      <${Field} label=${t('newPassword')} hint=${t('passwordHint')}><input type="password" name="password" autocomplete="new-password" required minlength="8" maxlength="64" /></${Field}>
      <${Field} label=${t('newPassword2')}><input type="password" name="password2" autocomplete="new-password" required maxlength="64" /></${Field}>
      <button type="submit" disabled=${busy}>${t('changePassword')}</button>
    </form>
    <${ErrorText} error=${error} />
  </section>`
}

function AccessToken ({ me }) {
  const [token, setToken] = useState(null)
  const generate = async () => setToken(await api('/api/user/token'))
  return html`<section class="panel acct" aria-labelledby="token-h">
    <h2 id="token-h">${t('tokenTitle')}</h2>
    <p class="muted">${t('tokenHint', { id: me.id })}</p>
    ${token ? html`<p role="status">${t('tokenShown')}</p>
      <p class="secret" data-testid="access-token">${token}</p>
      <${CopyButton} text=${token} label=${t('copyToken')} />` : null}
    <p><${ActionButton} action=${generate} confirm=${t('confirmGenerate')}>${t('generate')}</${ActionButton}></p>
  </section>`
}

function DeleteAccount ({ me }) {
  const { route } = useLocation()
  const [open, setOpen] = useState(false)
  const [typed, setTyped] = useState('')
  const [error, setError] = useState(null)
  const remove = async () => {
    setError(null)
    try {
      await api('/api/user/self', { method: 'DELETE' })
      toast(t('deleted'))
      rememberUser(null)
      window.dispatchEvent(new CustomEvent('signed-out'))
      route('/')
    } catch (e) { setError(e) }
  }
  return html`<section class="panel acct danger-zone" aria-labelledby="delete-h">
    <h2 id="delete-h">${t('danger')}</h2>
    <p class="muted">${t('deleteHint')}</p>
    <button type="button" class="danger" onClick=${() => setOpen(true)}>${t('deleteAccount')}</button>
    <${Modal} open=${open} title=${t('confirmDeleteTitle')} onClose=${() => { setOpen(false); setTyped('') }}>
      <p>${t('deleteHint')}</p>
      <${Field} label=${t('typeName', { name: me.username })} wide>
        <input name="confirm-username" autocomplete="off" value=${typed} onInput=${e => setTyped(e.currentTarget.value)} />
      </${Field}>
      <div class="row">
        <button type="button" class="danger" disabled=${typed !== me.username} onClick=${remove}>${t('deleteAccount')}</button>
        <button type="button" onClick=${() => setOpen(false)}>${common('cancel')}</button>
      </div>
      <${ErrorText} error=${error} />
    </${Modal}>
  </section>`
}

export default function Personal () {
  const { refresh } = useSession()
  const self = useAsync(() => api('/api/user/self'))
  const me = self.data
  const saved = () => { self.reload(); refresh().catch(() => {}) }
  return html`<${Page} title=${t('title')}>
    <${ErrorText} error=${self.error} />
    ${me ? html`
      <${Profile} me=${me} onSaved=${saved} />
      <${Password} />
      <${AccessToken} me=${me} />
      <${Notifications} />
      <${Bindings} />
      <${Security} />
      ${me.role < ROLE_ROOT ? html`<${DeleteAccount} me=${me} />` : null}`
    : self.loading ? html`<p class="loading">${common('loading')}</p>` : null}
  </${Page}>`
}
