// Signing in with an outside account: the OAuth providers /api/status says are on (GitHub,
// Discord, Linux DO, OIDC), WeChat's code dialog and Telegram's login. Each OAuth button
// starts the server's flow (PKCE, the OIDC nonce, the exact redirect URI) with
// callback=page: the provider sends the browser back to /oauth/<provider> (pages/oauth.js),
// which asks the callback and learns the user, as new-api's page does. Telegram's widget
// is a telegram.org script our policy forbids, so the console uses Telegram's redirect
// login instead: the signed result comes back to /oauth/telegram in the URL fragment.
import { useState } from 'preact/hooks'
import { html } from '../../lib/html.js'
import { api, navigate } from '../../lib/api.js'
import { translator } from '../../lib/i18n.js'
import { useSession } from '../../lib/session.js'
import { ErrorText, Field, Modal } from '../../lib/ui.js'

export const strings = {
  en: {
    or: 'Or continue with',
    continueWith: 'Continue with {provider}',
    wechat: 'WeChat',
    wechatTitle: 'WeChat',
    wechatHint: 'Scan the QR code with WeChat to follow the official account, send it “验证码” and enter the code it replies with.',
    wechatQr: 'The official account’s QR code',
    code: 'Verification code',
    submit: 'Continue'
  },
  'zh-CN': {
    or: '或使用以下方式继续',
    continueWith: '使用 {provider} 继续',
    wechat: '微信',
    wechatTitle: '微信登录',
    wechatHint: '用微信扫描二维码关注公众号，发送“验证码”，然后输入收到的验证码。',
    wechatQr: '公众号二维码',
    code: '验证码',
    submit: '继续'
  }
}
const t = translator(strings)

/** The OAuth providers of the oauth plugin: their path name, title and /api/status switch. */
const OAUTH = [
  { name: 'github', title: 'GitHub', on: s => s.github_oauth },
  { name: 'discord', title: 'Discord', on: s => s.discord_oauth },
  { name: 'linuxdo', title: 'Linux DO', on: s => s.linuxdo_oauth },
  { name: 'oidc', title: 'OIDC', on: s => s.oidc_enabled }
]
const wechatOn = status => Boolean(status.wechat_login)
const telegramOn = status => Boolean(status.telegram_oauth) && /^\d+$/.test(status.telegram_bot_id || '')

/** A provider's name as people know it (the bindings list shows the path names). */
export function providerTitle (name) {
  if (name === 'wechat') return t('wechat')
  if (name === 'telegram') return 'Telegram'
  return OAUTH.find(p => p.name === name)?.title || name
}

// where to go once the provider has sent the browser back (this tab only)
const NEXT_KEY = 'signin-next'
const localPath = path => typeof path === 'string' && path.startsWith('/') && !path.startsWith('//') && !path.includes('\\')

/** The page to open after an outside sign-in (the login page's `next`), used up. */
export function takeNext () {
  const next = sessionStorage.getItem(NEXT_KEY)
  sessionStorage.removeItem(NEXT_KEY)
  return localPath(next) ? next : '/console'
}

function keepNext (next) {
  if (localPath(next)) sessionStorage.setItem(NEXT_KEY, next)
  else sessionStorage.removeItem(NEXT_KEY)
}

/** Off to the provider. Logged in, the same flow binds the account to the user. */
function startOAuth (provider, { aff, next } = {}) {
  keepNext(next)
  navigate(`/api/oauth/${provider}/authorize`, { callback: 'page', aff })
}

/** Off to Telegram's login, which comes back to /oauth/telegram#tgAuthResult=… */
function startTelegram (status, next) {
  keepNext(next)
  const origin = window.location.origin
  const params = new URLSearchParams({ bot_id: status.telegram_bot_id, origin, return_to: `${origin}/oauth/telegram` })
  window.location.assign(`https://oauth.telegram.org/auth?${params}`)
}

/** The outside sign-ins the site turned on, in the order their buttons show: `{name, start}`
 *  each. OAuth and Telegram come back to `next`; `aff()`: the invitation code to sign up
 *  with; `wechat`: opens the code dialog; `telegram: false` leaves Telegram out. Logged in,
 *  each binds the account instead. */
export function signInMethods (status, { next, aff, wechat, telegram = true }) {
  return [
    ...OAUTH.filter(p => p.on(status)).map(p => ({ name: p.name, start: () => startOAuth(p.name, { aff: aff ? aff() : '', next }) })),
    wechatOn(status) && { name: 'wechat', start: wechat },
    telegram && telegramOn(status) && { name: 'telegram', start: () => startTelegram(status, next) }
  ].filter(Boolean)
}

/** The WeChat code dialog: `bind` for a logged-in user, else a login (or sign-up with `aff`).
 *  `onDone(answer)` gets the login's answer (the user or the 2FA step). */
export function WeChatDialog ({ bind, aff, onClose, onDone }) {
  const { status } = useSession()
  const [error, setError] = useState(null)
  const [busy, setBusy] = useState(false)
  const submit = async e => {
    e.preventDefault()
    const code = e.currentTarget.code.value.trim()
    setBusy(true)
    setError(null)
    try {
      if (bind) onDone(await api('/api/oauth/wechat/bind', { method: 'POST', body: { code } }))
      else onDone(await api('/api/oauth/wechat', { params: { code, aff: aff ? aff() : '' } }))
    } catch (err) { setError(err) } finally { setBusy(false) }
  }
  return html`<${Modal} open title=${t('wechatTitle')} onClose=${onClose}>
    ${status.wechat_qrcode ? html`<p><img class="qr" src=${status.wechat_qrcode} alt=${t('wechatQr')} /></p>` : null}
    <p>${t('wechatHint')}</p>
    <form class="form-grid" onSubmit=${submit}>
      <${Field} label=${t('code')}><input name="code" autocomplete="one-time-code" required maxlength="64" /></${Field}>
      <button type="submit" disabled=${busy}>${t('submit')}</button>
    </form>
    <${ErrorText} error=${error} />
  </${Modal}>`
}

/** The login and register pages' buttons, one per method that is on (nothing when none).
 *  `aff()`: the invitation code to sign up with; `telegram`: offer Telegram (it logs in
 *  bound accounts only, so not on the register page); `onAnswer`: a WeChat login's answer. */
export function OutsideSignIn ({ aff, next, telegram, onAnswer }) {
  const { status } = useSession()
  const [wechat, setWechat] = useState(false)
  const methods = signInMethods(status, { next, aff, wechat: () => setWechat(true), telegram: Boolean(telegram) })
  if (!methods.length) return null
  return html`<div class="outside" role="group" aria-label=${t('or')}>
    <p class="muted">${t('or')}</p>
    ${methods.map(m => html`<button type="button" key=${m.name}
        onClick=${m.start}>${t('continueWith', { provider: providerTitle(m.name) })}</button>`)}
    ${wechat ? html`<${WeChatDialog} aff=${aff} onClose=${() => setWechat(false)}
        onDone=${answer => { setWechat(false); onAnswer(answer) }} />` : null}
  </div>`
}
