// Log in: password, then new-api's second step when the account has 2FA (TOTP or a
// backup code); a passkey when the passkeys plugin is on; the outside accounts the site
// turned on (signin/outside.js).
import { useState } from 'preact/hooks'
import { useLocation } from 'preact-iso/router'
import { html } from '../lib/html.js'
import { api } from '../lib/api.js'
import { translator } from '../lib/i18n.js'
import { useSession } from '../lib/session.js'
import { ErrorText, Field, Page } from '../lib/ui.js'
import { getAssertion } from '../lib/passkey.js'
import { OutsideSignIn } from './signin/outside.js'
import { SecondFactor } from './signin/second.js'

export const strings = {
  en: {
    title: 'Log in',
    username: 'Username or email',
    password: 'Password',
    submit: 'Log in',
    passkey: 'Log in with a passkey',
    forgot: 'Forgot your password?',
    noAccount: 'No account yet?',
    register: 'Register'
  },
  'zh-CN': {
    title: '登录',
    username: '用户名或邮箱',
    password: '密码',
    submit: '登录',
    passkey: '使用 Passkey 登录',
    forgot: '忘记密码？',
    noAccount: '还没有账户？',
    register: '注册'
  }
}
const t = translator(strings)

export default function Login () {
  const { status, signedIn } = useSession()
  const { route, query } = useLocation()
  const [error, setError] = useState(null)
  const [busy, setBusy] = useState(false)
  const [second, setSecond] = useState(null) // the pending 2FA flow

  const next = query.next && query.next.startsWith('/') && !query.next.startsWith('//') ? query.next : '/console'
  const done = user => {
    signedIn(user)
    route(next)
  }
  const answer = data => (data && data.require_2fa ? setSecond(data) : done(data))
  const attempt = async work => {
    setBusy(true)
    setError(null)
    try { await work() } catch (e) { setError(e) } finally { setBusy(false) }
  }
  const submit = e => {
    e.preventDefault()
    const form = e.currentTarget
    attempt(async () => {
      answer(await api('/api/user/login', { method: 'POST', body: { username: form.username.value, password: form.password.value } }))
    })
  }
  const passkey = () => attempt(async () => {
    const begin = await api('/api/user/passkey/login/begin', { method: 'POST' })
    const credential = await getAssertion(begin.options)
    done(await api('/api/user/passkey/login/finish', { method: 'POST', body: credential }))
  })

  return html`<${Page} title=${t('title')}>
    <div class="panel narrow">
      ${second ? html`<${SecondFactor} flow=${second} onDone=${done} />`
      : html`<form onSubmit=${submit} class="form-grid">
          <${Field} label=${t('username')} wide><input name="username" autocomplete="username" required maxlength="128" /></${Field}>
          <${Field} label=${t('password')} wide><input name="password" type="password" autocomplete="current-password" required maxlength="128" /></${Field}>
          <button type="submit" disabled=${busy}>${t('submit')}</button>
        </form>`}
      <${ErrorText} error=${error} />
      ${status.passkey_login && !second && window.PublicKeyCredential ? html`<p><button type="button" onClick=${passkey} disabled=${busy}>${t('passkey')}</button></p>` : null}
      ${second ? null : html`<${OutsideSignIn} next=${next} aff=${() => query.aff || ''} telegram onAnswer=${answer} />`}
      <p class="muted"><a href="/reset">${t('forgot')}</a></p>
      <p class="muted">${t('noAccount')} <a href="/register">${t('register')}</a></p>
    </div>
  </${Page}>`
}
