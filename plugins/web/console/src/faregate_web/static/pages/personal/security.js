// Personal settings, security: two-factor authentication (the totp plugin's /api/user/2fa/…)
// and the passkey (the passkeys plugin's /api/user/passkey…). A section whose plugin is not
// installed is not shown: the core then answers its routes HTTP 200 with success false
// (management/missing_methods.py), which the installed plugin's status route never does. Registering or deleting a passkey
// needs a secure verification first (POST /api/verify: the 2FA code, the passkey, or the
// account password when the account has neither).
import { useState } from 'preact/hooks'
import { html } from '../../lib/html.js'
import { api } from '../../lib/api.js'
import { translator } from '../../lib/i18n.js'
import { timeText } from '../../lib/format.js'
import { useSession } from '../../lib/session.js'
import { createCredential, getAssertion } from '../../lib/passkey.js'
import { t as common } from '../../lib/strings.js'
import { CopyButton, ErrorText, Field, Modal, toast, useAsync } from '../../lib/ui.js'

export const strings = {
  en: {
    twoFactor: 'Two-factor authentication (2FA)',
    on: 'On',
    off: 'Off',
    locked: 'Locked for a few minutes after repeated wrong codes.',
    backupLeft: 'Backup codes left: {count}',
    setUp: 'Set up 2FA',
    setupHint: 'Add this account to an authenticator app: open the link below on this device, or type the secret into the app. Then enter the 6-digit code it shows.',
    uri: 'Setup link (otpauth)',
    secret: 'Secret',
    backupCodes: 'Backup codes: keep them somewhere safe. Each one signs you in once if you lose the app.',
    copyCodes: 'Copy the backup codes',
    code: '6-digit code',
    codeOrBackup: 'Code from the app, or a backup code',
    enable: 'Enable 2FA',
    enabled: '2FA is on.',
    disable: 'Disable 2FA',
    disabled: '2FA is off.',
    newCodes: 'New backup codes',
    newCodesHint: 'The old backup codes stop working.',
    passkey: 'Passkey',
    passkeyOff: 'Passkeys are turned off on this site.',
    noPasskey: 'No passkey registered.',
    hasPasskey: 'A passkey is registered (last used: {when}).',
    register: 'Register a passkey',
    registered: 'Passkey registered.',
    remove: 'Remove the passkey',
    confirmRemove: 'Remove your passkey? You will sign in with your password again.',
    removed: 'Passkey removed.',
    noWebAuthn: 'This browser cannot use passkeys.',
    verifyTitle: 'Confirm it is you',
    verifyPassword: 'Enter your account password to continue.',
    verify2fa: 'Enter a code from your authenticator app to continue.',
    verifyPasskey: 'Use your passkey to continue.',
    password: 'Password',
    usePasskey: 'Use the passkey',
    verify: 'Continue'
  },
  'zh-CN': {
    twoFactor: '两步验证（2FA）',
    on: '已开启',
    off: '未开启',
    locked: '多次输错验证码，已暂时锁定几分钟。',
    backupLeft: '剩余备用码：{count} 个',
    setUp: '设置两步验证',
    setupHint: '将此账户添加到身份验证器：在本设备上打开下面的链接，或在应用中手动输入密钥，然后输入应用显示的 6 位验证码。',
    uri: '设置链接（otpauth）',
    secret: '密钥',
    backupCodes: '备用码：请妥善保存。丢失身份验证器时，每个备用码可登录一次。',
    copyCodes: '复制备用码',
    code: '6 位验证码',
    codeOrBackup: '验证器中的验证码或备用码',
    enable: '启用两步验证',
    enabled: '两步验证已开启。',
    disable: '停用两步验证',
    disabled: '两步验证已关闭。',
    newCodes: '重新生成备用码',
    newCodesHint: '旧的备用码将失效。',
    passkey: 'Passkey',
    passkeyOff: '本站未启用 Passkey。',
    noPasskey: '尚未注册 Passkey。',
    hasPasskey: '已注册 Passkey（上次使用：{when}）。',
    register: '注册 Passkey',
    registered: 'Passkey 注册成功。',
    remove: '删除 Passkey',
    confirmRemove: '确定删除 Passkey？之后需使用密码登录。',
    removed: 'Passkey 已删除。',
    noWebAuthn: '此浏览器不支持 Passkey。',
    verifyTitle: '安全验证',
    verifyPassword: '请输入账户密码以继续。',
    verify2fa: '请输入身份验证器中的验证码以继续。',
    verifyPasskey: '请使用 Passkey 完成验证以继续。',
    password: '密码',
    usePasskey: '使用 Passkey 验证',
    verify: '继续'
  }
}
const t = translator(strings)

/** A plugin's status: its data when the plugin is installed; {absent: true} when the core
 *  answers for the missing plugin (HTTP 200, success false) or, on an older core, 404. */
const optional = path => api(path).catch(e => {
  if (e.status === 200 || e.status === 404) return { absent: true }
  throw e
})

async function passkeyProof () {
  const begin = await api('/api/user/passkey/verify/begin', { method: 'POST' })
  const credential = await getAssertion(begin.options)
  await api('/api/user/passkey/verify/finish', { method: 'POST', body: credential })
  return { method: 'passkey', code: '' }
}

function VerifyDialog ({ method, onVerified, onClose }) {
  const [error, setError] = useState(null)
  const [busy, setBusy] = useState(false)
  const run = async proof => {
    setBusy(true)
    setError(null)
    try {
      const body = await proof()
      await api('/api/verify', { method: 'POST', body })
      onVerified()
    } catch (e) {
      setError(e)
    } finally {
      setBusy(false)
    }
  }
  const submit = e => {
    e.preventDefault()
    const code = e.currentTarget.code.value
    run(async () => ({ method, code }))
  }
  return html`<${Modal} open title=${t('verifyTitle')} onClose=${onClose}>
    ${method === 'passkey'
      ? html`<p>${t('verifyPasskey')}</p><button type="button" class="primary" disabled=${busy} onClick=${() => run(passkeyProof)}>${t('usePasskey')}</button>`
      : html`<form class="form-grid" onSubmit=${submit}>
          <p class="field wide">${method === '2fa' ? t('verify2fa') : t('verifyPassword')}</p>
          <${Field} label=${method === '2fa' ? t('code') : t('password')} wide>
            ${method === '2fa'
              ? html`<input name="code" autocomplete="one-time-code" inputmode="numeric" required maxlength="32" />`
              : html`<input name="code" type="password" autocomplete="current-password" required maxlength="128" />`}
          </${Field}>
          <button type="submit" disabled=${busy}>${t('verify')}</button>
        </form>`}
    <${ErrorText} error=${error} />
  </${Modal}>`
}

function TwoFactor ({ state, reload }) {
  const [setup, setSetup] = useState(null)
  const [error, setError] = useState(null)
  const [codes, setCodes] = useState(null)
  const act = async (work, done) => {
    setError(null)
    try { await work(); if (done) toast(done); reload() } catch (e) { setError(e) }
  }
  const withCode = (path, done, after) => e => {
    e.preventDefault()
    const form = e.currentTarget
    const code = form.code.value.trim()
    act(async () => { const data = await api(path, { method: 'POST', body: { code } }); form.reset(); if (after) after(data) }, done)
  }
  const begin = () => act(async () => setSetup(await api('/api/user/2fa/setup', { method: 'POST' })))
  return html`<section class="panel acct" aria-labelledby="tfa-h">
    <h2 id="tfa-h">${t('twoFactor')} <span class=${state.enabled ? 'badge on' : 'badge off'}>${state.enabled ? t('on') : t('off')}</span></h2>
    ${state.locked ? html`<p class="error">${t('locked')}</p>` : null}
    ${state.enabled ? html`
      <p>${t('backupLeft', { count: state.backup_codes_remaining ?? 0 })}</p>
      <div class="form-grid">
        <form class="form-grid" onSubmit=${withCode('/api/user/2fa/disable', t('disabled'))}>
          <${Field} label=${t('codeOrBackup')}><input name="code" autocomplete="one-time-code" required maxlength="32" /></${Field}>
          <button type="submit" class="danger">${t('disable')}</button>
        </form>
        <form class="form-grid" onSubmit=${withCode('/api/user/2fa/backup_codes', null, d => setCodes(d.backup_codes))}>
          <${Field} label=${t('code')} hint=${t('newCodesHint')}><input name="code" autocomplete="one-time-code" inputmode="numeric" required maxlength="32" /></${Field}>
          <button type="submit">${t('newCodes')}</button>
        </form>
      </div>`
    : setup ? html`
      <p>${t('setupHint')}</p>
      <p><span class="field-label">${t('uri')}</span><br /><a class="secret" href=${setup.qr_code_data}>${setup.qr_code_data}</a>
        <${CopyButton} text=${setup.qr_code_data} /></p>
      <p><span class="field-label">${t('secret')}</span><br /><code class="secret" data-testid="totp-secret">${setup.secret}</code>
        <${CopyButton} text=${setup.secret} /></p>
      <p>${t('backupCodes')}</p>
      <pre class="secret">${setup.backup_codes.join('\n')}</pre>
      <${CopyButton} text=${setup.backup_codes.join('\n')} label=${t('copyCodes')} />
      <form class="form-grid" onSubmit=${withCode('/api/user/2fa/enable', t('enabled'), () => setSetup(null))}>
        <${Field} label=${t('code')}><input name="code" autocomplete="one-time-code" inputmode="numeric" required maxlength="6" /></${Field}>
        <button type="submit">${t('enable')}</button>
      </form>`
    : html`<button type="button" onClick=${begin}>${t('setUp')}</button>`}
    ${codes ? html`<p>${t('backupCodes')}</p><pre class="secret">${codes.join('\n')}</pre>
      <${CopyButton} text=${codes.join('\n')} label=${t('copyCodes')} />` : null}
    <${ErrorText} error=${error} />
  </section>`
}

function Passkey ({ state, reload, verified }) {
  const { status } = useSession()
  const [error, setError] = useState(null)
  const [busy, setBusy] = useState(false)
  const act = async (work, done) => {
    setBusy(true)
    setError(null)
    try { await verified(work); toast(done); reload() } catch (e) { setError(e) } finally { setBusy(false) }
  }
  const register = () => act(async () => {
    const begin = await api('/api/user/passkey/register/begin', { method: 'POST' })
    await api('/api/user/passkey/register/finish', { method: 'POST', body: await createCredential(begin.options) })
  }, t('registered'))
  const remove = () => window.confirm(t('confirmRemove')) && act(() => api('/api/user/passkey', { method: 'DELETE' }), t('removed'))
  return html`<section class="panel acct" aria-labelledby="pk-h">
    <h2 id="pk-h">${t('passkey')}</h2>
    <p>${state.enabled ? t('hasPasskey', { when: timeText(state.last_used_at) }) : t('noPasskey')}</p>
    ${state.enabled ? html`<button type="button" class="danger" disabled=${busy} onClick=${remove}>${t('remove')}</button>`
      : !status.passkey_login ? html`<p class="muted">${t('passkeyOff')}</p>`
      : !window.PublicKeyCredential ? html`<p class="muted">${t('noWebAuthn')}</p>`
      : html`<button type="button" disabled=${busy} onClick=${register}>${t('register')}</button>`}
    <${ErrorText} error=${error} />
  </section>`
}

// when this page last passed POST /api/verify (the server keeps it 300 s; a little less here)
let verifiedAt = 0
const VERIFY_WINDOW_MS = 280 * 1000

export function Security () {
  const tfa = useAsync(() => optional('/api/user/2fa/status'))
  const pk = useAsync(() => optional('/api/user/passkey'))
  const [pending, setPending] = useState(null) // {resolve, reject} while the verification dialog is open

  /** Runs `work` behind a secure verification: asked first unless one was made in this
   *  page within the server's window (so the normal path meets no 403), and again if the
   *  server still says it is missing or expired. */
  const verified = async work => {
    const ask = async () => {
      await new Promise((resolve, reject) => setPending({ resolve, reject }))
      verifiedAt = Date.now()
    }
    if (Date.now() - verifiedAt > VERIFY_WINDOW_MS) await ask()
    try {
      return await work()
    } catch (e) {
      if (e.status !== 403) throw e
    }
    await ask()
    return work()
  }
  const method = tfa.data?.enabled ? '2fa' : pk.data?.enabled ? 'passkey' : 'password'
  return html`
    <${ErrorText} error=${tfa.error || pk.error} />
    ${tfa.data && !tfa.data.absent ? html`<${TwoFactor} state=${tfa.data} reload=${tfa.reload} />` : null}
    ${pk.data && !pk.data.absent ? html`<${Passkey} state=${pk.data} reload=${pk.reload} verified=${verified} />` : null}
    ${pending ? html`<${VerifyDialog} method=${method}
        onVerified=${() => { pending.resolve(); setPending(null) }}
        onClose=${() => { pending.reject(new Error(common('cancel'))); setPending(null) }} />` : null}`
}
