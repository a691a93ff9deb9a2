// Password reset, as new-api's (the email plugin's routes): /reset asks for the address and
// sends the link (GET /api/reset_password, which answers the same whether or not an account
// has it); the link lands on /user/reset?email=…&token=…, which confirms the reset
// (POST /api/user/reset) and shows the new password the server made, once.
import { useState } from 'preact/hooks'
import { useLocation } from 'preact-iso/router'
import { html } from '../lib/html.js'
import { api } from '../lib/api.js'
import { translator } from '../lib/i18n.js'
import { CopyButton, ErrorText, Field, Page } from '../lib/ui.js'

export const strings = {
  en: {
    title: 'Reset the password',
    email: 'Email',
    emailHint: 'The address of your account: a reset link is sent to it.',
    send: 'Send the reset link',
    sent: 'If an account has {email}, a reset link is on its way. It works once, for a short time.',
    confirmHint: 'Reset the password of {email}? A new password is made and shown here once; every session of the account ends.',
    confirm: 'Reset the password',
    newPassword: 'Your new password',
    newPasswordHint: 'Copy it now: it is shown once. Log in with it, then change it in your personal settings.',
    copy: 'Copy the password',
    back: 'Back to log in'
  },
  'zh-CN': {
    title: '重置密码',
    email: '邮箱',
    emailHint: '账户绑定的邮箱：重置链接将发送到此地址。',
    send: '发送重置链接',
    sent: '如果有账户绑定了 {email}，重置链接已发出。链接仅可使用一次，且很快失效。',
    confirmHint: '确定重置 {email} 的密码？系统将生成新密码并只在此显示一次，该账户的所有会话都将退出。',
    confirm: '重置密码',
    newPassword: '新密码',
    newPasswordHint: '请立即复制：新密码只显示这一次。用它登录后，请在个人设置中修改密码。',
    copy: '复制密码',
    back: '返回登录'
  }
}
const t = translator(strings)

function AskForLink () {
  const [error, setError] = useState(null)
  const [busy, setBusy] = useState(false)
  const [sentTo, setSentTo] = useState(null)
  const submit = async e => {
    e.preventDefault()
    const email = e.currentTarget.email.value.trim()
    setBusy(true)
    setError(null)
    try {
      await api('/api/reset_password', { params: { email } })
      setSentTo(email)
    } catch (err) { setError(err) } finally { setBusy(false) }
  }
  return html`<form onSubmit=${submit} class="form-grid">
    <${Field} label=${t('email')} hint=${t('emailHint')} wide>
      <input name="email" type="email" autocomplete="email" required maxlength="128" /></${Field}>
    <button type="submit" disabled=${busy} aria-busy=${busy}>${t('send')}</button>
    ${sentTo ? html`<p class="good field wide" role="status">${t('sent', { email: sentTo })}</p>` : null}
    <${ErrorText} error=${error} />
  </form>`
}

function Confirm ({ email, token }) {
  const [error, setError] = useState(null)
  const [busy, setBusy] = useState(false)
  const [password, setPassword] = useState(null)
  const confirm = async () => {
    setBusy(true)
    setError(null)
    try {
      setPassword(await api('/api/user/reset', { method: 'POST', body: { email, token } }))
    } catch (err) { setError(err) } finally { setBusy(false) }
  }
  if (password) {
    return html`<div class="form-grid">
      <p class="field wide">${t('newPasswordHint')}</p>
      <p class="field wide"><span class="field-label">${t('newPassword')}</span><br />
        <code class="secret" data-testid="new-password">${password}</code></p>
      <div class="row"><${CopyButton} text=${password} label=${t('copy')} /></div>
    </div>`
  }
  return html`<div class="form-grid">
    <p class="field wide">${t('confirmHint', { email })}</p>
    <button type="button" class="primary" disabled=${busy} aria-busy=${busy} onClick=${confirm}>${t('confirm')}</button>
    <${ErrorText} error=${error} />
  </div>`
}

export default function Reset () {
  const { query } = useLocation()
  return html`<${Page} title=${t('title')}>
    <div class="panel narrow">
      ${query.email && query.token ? html`<${Confirm} email=${query.email} token=${query.token} />` : html`<${AskForLink} />`}
      <p class="muted"><a href="/login">${t('back')}</a></p>
    </div>
  </${Page}>`
}
