// /oauth/<provider>: where an outside sign-in comes back (new-api's frontend callback).
// An OAuth provider sends ?code&state: this page asks GET /api/oauth/<provider> with them
// and reads the answer: the user (logged in: their id goes into New-Api-User), the 2FA
// step, a binding made for the logged-in user, or why it failed. Telegram's redirect login
// sends its signed data in the fragment (#tgAuthResult=<base64 JSON>, never sent to a
// server by the browser): it logs in (/api/oauth/telegram/login) or, for a logged-in user,
// binds (/api/oauth/telegram/bind, which answers a redirect to the personal page).
import { useEffect, useState } from 'preact/hooks'
import { useLocation } from 'preact-iso/router'
import { html } from '../lib/html.js'
import { ApiError, api, headers } from '../lib/api.js'
import { translator } from '../lib/i18n.js'
import { useSession } from '../lib/session.js'
import { ErrorText, Page, toast } from '../lib/ui.js'
import { providerTitle, takeNext } from './signin/outside.js'
import { SecondFactor } from './signin/second.js'

export const strings = {
  en: {
    title: 'Signing in with {provider}',
    linkTitle: 'Linking your {provider} account',
    working: 'One moment…',
    linked: 'Your {provider} account is linked.',
    noAnswer: '{provider} sent nothing back: start again.',
    login: 'Back to the login page',
    personal: 'Back to your personal settings'
  },
  'zh-CN': {
    title: '使用 {provider} 登录',
    linkTitle: '绑定 {provider} 账户',
    working: '请稍候…',
    linked: '已绑定 {provider} 账户。',
    noAnswer: '{provider} 没有返回登录信息，请重试。',
    login: '返回登录页',
    personal: '返回个人设置'
  }
}
const t = translator(strings)

// an answer is asked once per code or fragment: the provider's code works once
const asked = new Set()

/** Telegram's signed fields from `#tgAuthResult=<base64url JSON>`, each as the text it was
 *  signed as; null when the fragment has none (Telegram sends `false` when refused). */
export function telegramFields (fragment) {
  const found = /[#&]tgAuthResult=([^&]*)/.exec(fragment)
  if (!found) return null
  try {
    const b64 = decodeURIComponent(found[1]).replace(/-/g, '+').replace(/_/g, '/')
    const bytes = Uint8Array.from(atob(b64.padEnd(Math.ceil(b64.length / 4) * 4, '=')), c => c.charCodeAt(0))
    const data = JSON.parse(new TextDecoder().decode(bytes))
    if (!data || typeof data !== 'object' || !data.hash) return null
    return Object.fromEntries(Object.entries(data).filter(([, v]) => v !== null && typeof v !== 'object').map(([k, v]) => [k, String(v)]))
  } catch {
    return null
  }
}

async function telegram (fields, signedIn) {
  // every field as Telegram signed it, empty ones too (api()'s query() drops those)
  const signed = new URLSearchParams(fields).toString()
  if (!signedIn) return api(`/api/oauth/telegram/login?${signed}`)
  // the binding answers a redirect to the personal page: not followed, it means done
  const res = await fetch(`/api/oauth/telegram/bind?${signed}`, { headers: headers(), credentials: 'same-origin', redirect: 'manual' })
  if (res.type === 'opaqueredirect') return { action: 'bind' }
  let body = null
  try { body = await res.json() } catch {}
  throw new ApiError(body?.message || `HTTP ${res.status}`, res.status)
}

export default function OAuthReturn ({ provider }) {
  const { user, signedIn } = useSession()
  const { query, route } = useLocation()
  const [error, setError] = useState(null)
  const [second, setSecond] = useState(null)
  const title = providerTitle(provider)

  const done = who => { signedIn(who); route(takeNext(), true) }
  useEffect(() => {
    const answer = data => {
      if (data && data.action === 'bind') {
        toast(t('linked', { provider: title }))
        route('/console/personal', true)
      } else if (data && data.require_2fa) {
        setSecond(data)
      } else {
        done(data)
      }
    }
    const fragment = window.location.hash
    const key = provider === 'telegram' ? fragment : query.code || query.error
    if (!key) return setError(new Error(t('noAnswer', { provider: title })))
    if (asked.has(key)) return
    asked.add(key)
    if (provider === 'telegram') {
      // the signed data leaves the address bar (and the history) at once
      history.replaceState(null, '', window.location.pathname + window.location.search)
      const fields = telegramFields(fragment)
      if (!fields) return setError(new Error(t('noAnswer', { provider: title })))
      telegram(fields, Boolean(user)).then(answer, setError)
    } else {
      api(`/api/oauth/${provider}`, { params: { code: query.code, state: query.state, error: query.error, error_description: query.error_description } })
        .then(answer, setError)
    }
  }, [])

  // a logged-in user's return binds the account (the server decides: its session is the user's)
  return html`<${Page} title=${t(user ? 'linkTitle' : 'title', { provider: title })}>
    <div class="panel narrow">
      ${second ? html`<${SecondFactor} flow=${second} onDone=${done} />`
        : error ? html`<${ErrorText} error=${error} />
          <p>${user ? html`<a href="/console/personal">${t('personal')}</a>` : html`<a href="/login">${t('login')}</a>`}</p>`
        : html`<p class="loading" role="status">${t('working')}</p>`}
    </div>
  </${Page}>`
}
