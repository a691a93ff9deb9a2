// The console's entry: loads /api/status and the signed-in user, then draws the layout
// and the page the path names. Pages load on first visit (one module each).
import { render } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import { LocationProvider, Router, Route, useLocation } from 'preact-iso/router'
import lazy, { ErrorBoundary } from 'preact-iso/lazy'
import { html } from './lib/html.js'
import { api, rememberUser, userId } from './lib/api.js'
import { lang, setLang, LANGUAGES } from './lib/i18n.js'
import { t } from './lib/strings.js'
import { applyTheme, currentTheme, THEMES } from './lib/theme.js'
import { SessionContext, ROLE_ADMIN, ROLE_ROOT, useSession } from './lib/session.js'
import { Toasts } from './lib/ui.js'

const page = loader => lazy(() => loader().then(m => m.default))

// path → [module, who may open it: null (anyone), 'user', 'admin', 'root', nav label key]
export const PAGES = [
  ['/', page(() => import('./pages/home.js')), null],
  ['/login', page(() => import('./pages/login.js')), null],
  ['/register', page(() => import('./pages/register.js')), null],
  ['/setup', page(() => import('./pages/setup.js')), null],
  ['/reset', page(() => import('./pages/reset.js')), null],
  ['/user/reset', page(() => import('./pages/reset.js')), null],
  ['/pricing', page(() => import('./pages/pricing.js')), null],
  ['/about', page(() => import('./pages/about.js')), null],
  ['/oauth/:provider', page(() => import('./pages/oauth.js')), null],
  ['/console', page(() => import('./pages/dashboard.js')), 'user', 'dashboard'],
  ['/console/playground', page(() => import('./pages/playground.js')), 'user', 'playground'],
  ['/console/token', page(() => import('./pages/keys.js')), 'user', 'keys'],
  ['/console/log', page(() => import('./pages/logs.js')), 'user', 'logs'],
  ['/console/topup', page(() => import('./pages/wallet.js')), 'user', 'wallet'],
  ['/console/personal', page(() => import('./pages/personal.js')), 'user', 'personal'],
  ['/console/channel', page(() => import('./pages/channels.js')), 'admin', 'channels'],
  ['/console/user', page(() => import('./pages/users.js')), 'admin', 'users'],
  ['/console/redemption', page(() => import('./pages/redemptions.js')), 'admin', 'redemptions'],
  ['/console/models', page(() => import('./pages/models.js')), 'admin', 'models'],
  ['/console/setting', page(() => import('./pages/settings.js')), 'root', 'settings']
]

const allowed = (user, need) =>
  need === null || (user && (need === 'user' || (need === 'admin' && user.role >= ROLE_ADMIN) ||
    (need === 'root' && user.role >= ROLE_ROOT)))

function Guard ({ need, inner: Component, ...props }) {
  const { user } = useSession()
  const { url, route } = useLocation()
  useEffect(() => {
    if (need && !user) route(`/login?next=${encodeURIComponent(url)}`, true)
  }, [need, user, url])
  if (need && !user) return html`<p>${t('signInFirst')}</p>`
  if (!allowed(user, need)) return html`<p class="error" role="alert">${t('forbidden')}</p>`
  return html`<${Component} ...${props} />`
}

function NotFound () {
  return html`<section class="page"><h1>404</h1><p>${t('notFound')}</p></section>`
}

function ConsoleNav ({ onPick }) {
  const { user } = useSession()
  const { path } = useLocation()
  const link = ([href, , need, label]) => allowed(user, need) && html`
    <li><a href=${href} aria-current=${path === href ? 'page' : undefined} onClick=${onPick}>${t(label)}</a></li>`
  const mine = PAGES.filter(p => p[3] && p[2] === 'user')
  const admin = PAGES.filter(p => p[3] && p[2] !== 'user')
  return html`<nav class="console-nav" aria-label=${t('console')}>
    <ul>${mine.map(link)}</ul>
    ${user && user.role >= ROLE_ADMIN ? html`<h2>${t('adminArea')}</h2><ul>${admin.map(link)}</ul>` : null}
  </nav>`
}

function Header ({ onLogout, onLang, onTheme, theme }) {
  const { status, user } = useSession()
  const [open, setOpen] = useState(false)
  const { path } = useLocation()
  const inConsole = path.startsWith('/console')
  return html`<header class="top">
    <a class="brand" href="/">${status.system_name || 'Faregate'}</a>
    ${inConsole && user ? html`<button type="button" class="menu-toggle" aria-expanded=${open}
        aria-controls="side" onClick=${() => setOpen(!open)}>${t('menu')}</button>` : null}
    <nav class="top-nav" aria-label=${t('site')}>
      <a href="/pricing">${t('pricing')}</a>
      <a href="/about">${t('about')}</a>
      ${user ? html`<a href="/console">${t('console')}</a>
          <button type="button" class="link" onClick=${onLogout}>${t('logout')}</button>`
        : html`<a href="/login">${t('login')}</a><a href="/register">${t('register')}</a>`}
    </nav>
    <div class="prefs">
      <label><span class="visually-hidden">${t('language')}</span>
        <select name="lang" value=${lang()} onChange=${e => onLang(e.target.value)}>
          ${LANGUAGES.map(([code, name]) => html`<option value=${code}>${name}</option>`)}
        </select></label>
      <label><span class="visually-hidden">${t('theme')}</span>
        <select name="theme" value=${theme} onChange=${e => onTheme(e.target.value)}>
          ${THEMES.map(th => html`<option value=${th}>${t(`theme${th[0].toUpperCase()}${th.slice(1)}`)}</option>`)}
        </select></label>
    </div>
    ${inConsole && user ? html`<div id="side" class=${open ? 'side open' : 'side'}><${ConsoleNav} onPick=${() => setOpen(false)} /></div>` : null}
  </header>`
}

function Shell () {
  const [session, setSession] = useState(null)
  const [, setLangTick] = useState(0)
  const [theme, setThemeState] = useState(currentTheme())
  const { route, path } = useLocation()

  const load = async () => {
    const status = await api('/api/status')
    let user = null
    if (userId()) {
      try { user = await api('/api/user/self') } catch { rememberUser(null) }
    }
    setSession({ status, user })
    if (!status.setup && path !== '/setup') route('/setup', true)
  }
  useEffect(() => { load().catch(e => setSession({ status: {}, user: null, error: e })) }, [])
  useEffect(() => {
    const out = () => { rememberUser(null); setSession(s => s && { ...s, user: null }) }
    window.addEventListener('signed-out', out)
    return () => window.removeEventListener('signed-out', out)
  }, [])

  if (!session) return html`<p class="loading">${t('loading')}</p>`
  const value = {
    ...session,
    refresh: load,
    signedIn: user => { rememberUser(user.id); setSession(s => ({ ...s, user })) }
  }
  const logout = async () => {
    try { await api('/api/user/logout') } catch {}
    rememberUser(null)
    setSession(s => ({ ...s, user: null }))
    route('/login')
  }
  return html`<${SessionContext.Provider} value=${value}>
    <a class="skip" href="#main">${t('skip')}</a>
    <${Header} onLogout=${logout} theme=${theme}
      onLang=${code => { setLang(code); setLangTick(n => n + 1) }}
      onTheme=${th => { applyTheme(th); setThemeState(th) }} />
    <main id="main" class=${path.startsWith('/console') && session.user ? 'with-side' : ''}>
      <${ErrorBoundary}>
        <${Router}>
          ${PAGES.map(([p, component, need]) => html`<${Route} path=${p} component=${Guard} need=${need} inner=${component} />`)}
          <${Route} default component=${NotFound} />
        </${Router}>
      </${ErrorBoundary}>
    </main>
    <${Toasts} />
  </${SessionContext.Provider}>`
}

render(html`<${LocationProvider}><${Shell} /></${LocationProvider}>`, document.getElementById('app'))
