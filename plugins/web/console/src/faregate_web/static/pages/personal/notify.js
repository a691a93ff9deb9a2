// Personal settings, notifications (GET/PUT /api/user/setting): how a low balance is
// announced (email, webhook, Bark, Gotify) and below what; secrets are shown only as set,
// and an untouched secret field keeps the stored one.
import { useState } from 'preact/hooks'
import { html } from '../../lib/html.js'
import { api } from '../../lib/api.js'
import { translator } from '../../lib/i18n.js'
import { quotaText } from '../../lib/format.js'
import { useSession } from '../../lib/session.js'
import { t as common } from '../../lib/strings.js'
import { ErrorText, Field, toast, useAsync } from '../../lib/ui.js'

export const strings = {
  en: {
    notify: 'Notifications',
    notifyType: 'Notify me by',
    email: 'Email',
    webhook: 'Webhook',
    bark: 'Bark',
    gotify: 'Gotify',
    threshold: 'Warn when the balance falls below (quota)',
    thresholdHint: 'Now: {amount}.',
    notificationEmail: 'Notification email (empty: the account\'s)',
    webhookUrl: 'Webhook URL',
    webhookSecret: 'Webhook secret',
    barkUrl: 'Bark URL',
    gotifyUrl: 'Gotify server URL',
    gotifyToken: 'Gotify application token',
    gotifyPriority: 'Gotify priority (0–10)',
    secretSet: 'A secret is stored: leave empty to keep it.',
    acceptUnpriced: 'Accept models without a price (they are billed nothing)',
    recordIp: 'Record the client IP in my logs',
    saved: 'Notification settings saved.'
  },
  'zh-CN': {
    notify: '通知设置',
    notifyType: '通知方式',
    email: '邮件',
    webhook: 'Webhook',
    bark: 'Bark',
    gotify: 'Gotify',
    threshold: '余额低于此额度时提醒',
    thresholdHint: '当前：{amount}。',
    notificationEmail: '通知邮箱（留空：使用账户邮箱）',
    webhookUrl: 'Webhook 地址',
    webhookSecret: 'Webhook 密钥',
    barkUrl: 'Bark 推送地址',
    gotifyUrl: 'Gotify 服务器地址',
    gotifyToken: 'Gotify 应用令牌',
    gotifyPriority: 'Gotify 优先级（0–10）',
    secretSet: '已保存密钥：留空则保持不变。',
    acceptUnpriced: '接受未设置价格的模型（不计费）',
    recordIp: '在我的日志中记录客户端 IP',
    saved: '通知设置已保存。'
  }
}
const t = translator(strings)
const TYPES = ['email', 'webhook', 'bark', 'gotify']

export function Notifications () {
  const { status } = useSession()
  const { data, error, reload } = useAsync(() => api('/api/user/setting'))
  const [type, setType] = useState(null)
  const [threshold, setThreshold] = useState(null)
  const [saveError, setSaveError] = useState(null)
  const [busy, setBusy] = useState(false)
  if (!data) return html`<${ErrorText} error=${error} />`
  const kind = type || data.notify_type || 'email'
  const limit = threshold ?? data.quota_warning_threshold ?? (status.quota_per_unit || 500000)

  const submit = async e => {
    e.preventDefault()
    const f = e.currentTarget
    const text = name => (f[name] ? f[name].value.trim() : (data[name] || ''))
    const secret = name => (f[name] && f[name].value ? f[name].value : Boolean(data[name]))
    const body = {
      notify_type: kind,
      quota_warning_threshold: Number(f.quota_warning_threshold.value),
      notification_email: text('notification_email'),
      webhook_url: text('webhook_url'),
      webhook_secret: secret('webhook_secret'),
      bark_url: text('bark_url'),
      gotify_url: text('gotify_url'),
      gotify_token: secret('gotify_token'),
      gotify_priority: f.gotify_priority ? Number(f.gotify_priority.value) : (data.gotify_priority ?? 5),
      accept_unset_model_ratio_model: f.accept_unset_model_ratio_model.checked,
      record_ip_log: f.record_ip_log.checked
    }
    setBusy(true)
    setSaveError(null)
    try {
      await api('/api/user/setting', { method: 'PUT', body })
      toast(t('saved'))
      reload()
    } catch (err) {
      setSaveError(err)
    } finally {
      setBusy(false)
    }
  }
  const secretField = (name, label) => html`<${Field} label=${label} hint=${data[name] ? t('secretSet') : null}>
    <input type="password" name=${name} autocomplete="new-password" maxlength="2048" /></${Field}>`
  const urlField = (name, label) => html`<${Field} label=${label}>
    <input type="url" name=${name} value=${data[name] || ''} maxlength="2048" /></${Field}>`

  return html`<section class="panel acct" aria-labelledby="notify-h">
    <h2 id="notify-h">${t('notify')}</h2>
    <form class="form-grid" onSubmit=${submit}>
      <${Field} label=${t('notifyType')}>
        <select name="notify_type" value=${kind} onChange=${e => setType(e.currentTarget.value)}>
          ${TYPES.map(k => html`<option value=${k}>${t(k)}</option>`)}
        </select>
      </${Field}>
      <${Field} label=${t('threshold')} hint=${t('thresholdHint', { amount: quotaText(limit, status) })}>
        <input type="number" name="quota_warning_threshold" min="1" step="1" required value=${limit}
          onInput=${e => setThreshold(Number(e.currentTarget.value))} />
      </${Field}>
      ${kind === 'email' ? html`<${Field} label=${t('notificationEmail')}>
        <input type="email" name="notification_email" value=${data.notification_email || ''} maxlength="254" /></${Field}>` : null}
      ${kind === 'webhook' ? html`${urlField('webhook_url', t('webhookUrl'))}${secretField('webhook_secret', t('webhookSecret'))}` : null}
      ${kind === 'bark' ? urlField('bark_url', t('barkUrl')) : null}
      ${kind === 'gotify' ? html`${urlField('gotify_url', t('gotifyUrl'))}${secretField('gotify_token', t('gotifyToken'))}
        <${Field} label=${t('gotifyPriority')}><input type="number" name="gotify_priority" min="0" max="10" step="1" value=${data.gotify_priority ?? 5} /></${Field}>` : null}
      <label class="check field wide"><input type="checkbox" name="accept_unset_model_ratio_model" checked=${Boolean(data.accept_unset_model_ratio_model)} /> ${t('acceptUnpriced')}</label>
      <label class="check field wide"><input type="checkbox" name="record_ip_log" checked=${Boolean(data.record_ip_log)} /> ${t('recordIp')}</label>
      <button type="submit" disabled=${busy} aria-busy=${busy}>${common('save')}</button>
    </form>
    <${ErrorText} error=${saveError} />
  </section>`
}
