// new-api's second login step: an account with 2FA answers any first step (password,
// OAuth, WeChat, Telegram) with `require_2fa` and a flow token; the TOTP or a backup code
// then ends the login.
import { useState } from 'preact/hooks'
import { html } from '../../lib/html.js'
import { api } from '../../lib/api.js'
import { translator } from '../../lib/i18n.js'
import { ErrorText, Field } from '../../lib/ui.js'

export const strings = {
  en: {
    code: 'Two-factor code',
    codeHint: 'The 6-digit code from your authenticator app, or a backup code.',
    verify: 'Verify'
  },
  'zh-CN': {
    code: '两步验证码',
    codeHint: '身份验证器中的 6 位验证码，或一个备用码。',
    verify: '验证'
  }
}
const t = translator(strings)

/** The code form for the pending login `flow` (the first step's answer); `onDone(user)`. */
export function SecondFactor ({ flow, onDone }) {
  const [error, setError] = useState(null)
  const [busy, setBusy] = useState(false)
  const verify = async e => {
    e.preventDefault()
    const code = e.currentTarget.code.value
    setBusy(true)
    setError(null)
    try {
      onDone(await api('/api/user/login/2fa', { method: 'POST', body: { code, flow_token: flow.flow_token } }))
    } catch (err) { setError(err) } finally { setBusy(false) }
  }
  return html`<form onSubmit=${verify} class="form-grid">
      <${Field} label=${t('code')} hint=${t('codeHint')} wide>
        <input name="code" autocomplete="one-time-code" inputmode="numeric" required maxlength="32" autofocus />
      </${Field}>
      <button type="submit" disabled=${busy}>${t('verify')}</button>
    </form>
    <${ErrorText} error=${error} />`
}
