// Register with a username and password (and the email code when the site asks for
// one), then log in; or sign up with an outside account the site turned on (OAuth, WeChat:
// signin/outside.js), the invitation code carried along.
import { useRef, useState } from 'preact/hooks'
import { useLocation } from 'preact-iso/router'
import { html } from '../lib/html.js'
import { api } from '../lib/api.js'
import { translator } from '../lib/i18n.js'
import { ErrorText, Field, Page, toast } from '../lib/ui.js'
import { useSession } from '../lib/session.js'
import { OutsideSignIn } from './signin/outside.js'
import { SecondFactor } from './signin/second.js'

export const strings = {
  en: {
    title: 'Register',
    username: 'Username',
    password: 'Password',
    password2: 'Repeat the password',
    passwordHint: 'At least 8 characters.',
    email: 'Email',
    code: 'Email code',
    sendCode: 'Send code',
    codeSent: 'A code is on its way to {email}.',
    aff: 'Invitation code (optional)',
    submit: 'Register',
    mismatch: 'The two passwords differ.',
    done: 'Registered: log in now.',
    haveAccount: 'Already registered?',
    login: 'Log in'
  },
  'zh-CN': {
    title: '注册',
    username: '用户名',
    password: '密码',
    password2: '确认密码',
    passwordHint: '至少 8 个字符。',
    email: '邮箱',
    code: '邮箱验证码',
    sendCode: '发送验证码',
    codeSent: '验证码已发送至 {email}。',
    aff: '邀请码（可选）',
    submit: '注册',
    mismatch: '两次输入的密码不一致。',
    done: '注册成功，请登录。',
    haveAccount: '已有账户？',
    login: '登录'
  }
}
const t = translator(strings)

export default function Register () {
  const { status, signedIn } = useSession()
  const { route, query } = useLocation()
  const [error, setError] = useState(null)
  const [busy, setBusy] = useState(false)
  const [second, setSecond] = useState(null) // an existing account's pending 2FA (WeChat logs it in)
  const form = useRef(null)
  const done = user => { signedIn(user); route('/console') }
  const answer = data => (data && data.require_2fa ? setSecond(data) : done(data))

  const submit = async e => {
    e.preventDefault()
    const f = e.currentTarget
    if (f.password.value !== f.password2.value) return setError(new Error(t('mismatch')))
    setBusy(true)
    setError(null)
    try {
      await api('/api/user/register', {
        method: 'POST',
        body: {
          username: f.username.value,
          password: f.password.value,
          password2: f.password2.value,
          email: f.email ? f.email.value : '',
          verification_code: f.verification_code ? f.verification_code.value : '',
          aff_code: f.aff_code.value
        }
      })
      toast(t('done'))
      route('/login')
    } catch (err) {
      setError(err)
    } finally {
      setBusy(false)
    }
  }
  const sendCode = async e => {
    const email = e.currentTarget.form.email.value
    try {
      await api('/api/verification', { params: { email } })
      toast(t('codeSent', { email }))
    } catch (err) { setError(err) }
  }
  return html`<${Page} title=${t('title')}>
    <div class="panel narrow">
      ${second ? html`<${SecondFactor} flow=${second} onDone=${done} />` : html`
      <form onSubmit=${submit} class="form-grid" ref=${form}>
        <${Field} label=${t('username')} wide><input name="username" autocomplete="username" required maxlength="20" /></${Field}>
        <${Field} label=${t('password')} hint=${t('passwordHint')} wide>
          <input name="password" type="password" autocomplete="new-password" required minlength="8" maxlength="64" /></${Field}>
        <${Field} label=${t('password2')} wide><input name="password2" type="password" autocomplete="new-password" required maxlength="64" /></${Field}>
        ${status.email_verification ? html`
          <${Field} label=${t('email')} wide><input name="email" type="email" autocomplete="email" required maxlength="128" /></${Field}>
          <${Field} label=${t('code')}><input name="verification_code" required maxlength="32" /></${Field}>
          <button type="button" onClick=${sendCode}>${t('sendCode')}</button>` : null}
        <${Field} label=${t('aff')} wide><input name="aff_code" maxlength="32" value=${query.aff || ''} /></${Field}>
        <button type="submit" disabled=${busy}>${t('submit')}</button>
      </form>
      <${OutsideSignIn} aff=${() => form.current?.aff_code.value.trim() || ''} onAnswer=${answer} />`}
      <${ErrorText} error=${error} />
      <p class="muted">${t('haveAccount')} <a href="/login">${t('login')}</a></p>
    </div>
  </${Page}>`
}
