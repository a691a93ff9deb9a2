// System settings (root): one typed form per option, generated from the option registry
// (GET /api/option/schema: kind, bounds, choices) with the values in force (GET /api/option/).
// Each option saves on its own (PUT /api/option/); the server checks the value and its
// refusal is shown beside the field. Secrets are never shown: a new value can be set.
import { useMemo, useState } from 'preact/hooks'
import { html } from '../lib/html.js'
import { api } from '../lib/api.js'
import { lang, translator } from '../lib/i18n.js'
import { t as common } from '../lib/strings.js'
import { ErrorText, Field, Page, useAsync } from '../lib/ui.js'

export const strings = {
  en: {
    title: 'System settings',
    filter: 'Filter settings',
    filterHint: 'By name or description.',
    matches: '{count} of {total} settings',
    none: 'No setting matches.',
    general: 'General and display',
    accounts: 'Sign-up and accounts',
    signIn: 'Sign-in methods',
    email: 'Email (SMTP)',
    prices: 'Prices and groups',
    quota: 'Quota',
    channels: 'Channels and retries',
    rateLimits: 'Rate limits',
    logs: 'Logs',
    payments: 'Payments',
    monitoring: 'Monitoring',
    other: 'Other',
    range: 'From {min} to {max}.',
    atLeast: 'At least {min}.',
    maxLength: 'At most {max} characters.',
    oneALine: 'One entry a line.',
    jsonHint: 'JSON.',
    badJson: 'This is not valid JSON: {message}',
    secret: 'Secret: the stored value is never shown. Enter a new value to replace it.',
    secretPlaceholder: 'unchanged',
    emptySecret: 'Enter the new value first.',
    clear: 'Clear',
    confirmClear: 'Clear {key}? The stored secret is removed.',
    cleared: 'Cleared',
    reset: 'Default',
    resetLabel: 'Put the default value of {key} in the field (not saved yet)',
    saveLabel: 'Save {key}',
    changed: 'Changed, not saved',
    format: 'Format',
    formatLabel: 'Lay out the JSON of {key} on several lines'
  },
  'zh-CN': {
    title: '系统设置',
    filter: '筛选设置项',
    filterHint: '按名称或说明筛选。',
    matches: '共 {total} 项，匹配 {count} 项',
    none: '没有匹配的设置项。',
    general: '通用与显示',
    accounts: '注册与账户',
    signIn: '登录方式',
    email: '邮件（SMTP）',
    prices: '价格与分组',
    quota: '额度',
    channels: '渠道与重试',
    rateLimits: '速率限制',
    logs: '日志',
    payments: '支付',
    monitoring: '监控',
    other: '其他',
    range: '取值 {min} 到 {max}。',
    atLeast: '不小于 {min}。',
    maxLength: '最多 {max} 个字符。',
    oneALine: '每行一项。',
    jsonHint: 'JSON 格式。',
    badJson: 'JSON 格式不正确：{message}',
    secret: '密钥：已保存的值不会显示。输入新值即可替换。',
    secretPlaceholder: '保持不变',
    emptySecret: '请先输入新值。',
    clear: '清除',
    confirmClear: '确定清除 {key}？已保存的密钥将被删除。',
    cleared: '已清除',
    reset: '默认值',
    resetLabel: '将 {key} 的默认值填入输入框（尚未保存）',
    saveLabel: '保存 {key}',
    changed: '已修改，尚未保存',
    format: '格式化',
    formatLabel: '将 {key} 的 JSON 分行排版'
  }
}
const t = translator(strings)

// sections by key: the first rule that matches names the section
const SECTIONS = [
  ['payments', /^(Price|MinTopUp|TopupGroupRatio|payment_setting\.|Stripe|Creem|Epay|PayAddress|PayMethods|CustomCallbackAddress)/],
  ['email', /^SMTP/],
  ['signIn', /^(GitHub|discord\.|LinuxDO|oidc\.|Telegram|WeChat|passkey\.)/],
  ['accounts', /^(Register|Password|Email|QuotaForInvit)/],
  ['prices', /(Ratio$|^ModelPrice$|^UserUsableGroups$|^group_ratio_setting\.|^AutoGroups$|^DefaultUseAutoGroup$|^ExposeRatioEnabled$|^SyncUpstreamBase$)/],
  ['quota', /^(Quota|PreConsumedQuota|DefaultMaxTokensReserve)/],
  ['channels', /^(Retry|Automatic|ChannelCooldown)/],
  // new-api's per-user model request rate limit and the per-key limits' group defaults, side by side
  ['rateLimits', /^(ModelRequestRateLimit|KeyRateLimitGroup$)/],
  ['logs', /^Log[A-Z]/],
  ['monitoring', /^console_setting\./],
  ['general', /^(SystemName|Notice|About|HomePageContent|Footer|Logo|UserAgreement|PrivacyPolicy|ServerAddress|general_setting\.|DisplayInCurrency|DisplayTokenStat|USDExchangeRate|DemoSite|SelfUseMode)/]
]
const ORDER = ['general', 'accounts', 'signIn', 'email', 'prices', 'quota', 'channels', 'rateLimits', 'logs', 'payments', 'monitoring', 'other']
const sectionOf = key => (SECTIONS.find(([, re]) => re.test(key)) || ['other'])[0]

const LONG_TEXT = 4096
const numberText = n => Number(n).toLocaleString(lang(), { maximumFractionDigits: 10 })
const multiline = spec => spec.kind === 'json' || spec.kind === 'lines' || (spec.kind === 'text' && (spec.max_length || 0) > LONG_TEXT)

function hintOf (spec) {
  const parts = [spec.description]
  if (spec.secret) parts.push(t('secret'))
  else if (spec.kind === 'integer' || spec.kind === 'number') {
    parts.push(spec.maximum != null ? t('range', { min: numberText(spec.minimum), max: numberText(spec.maximum) }) : t('atLeast', { min: numberText(spec.minimum) }))
  } else if (spec.kind === 'lines') parts.push(t('oneALine'))
  else if (spec.kind === 'json') parts.push(t('jsonHint'))
  else if (spec.kind === 'text' && spec.max_length) parts.push(t('maxLength', { max: numberText(spec.max_length) }))
  return parts.filter(Boolean).join(' ')
}

/** The value to send, or throws an Error saying why it cannot be sent. */
function outgoing (spec, draft) {
  if (spec.kind === 'boolean') return draft ? 'true' : 'false'
  if (spec.kind === 'json' && draft.trim()) {
    try { JSON.parse(draft) } catch (e) { throw new Error(t('badJson', { message: e.message })) }
  }
  if (spec.secret && draft === '') throw new Error(t('emptySecret'))
  return draft
}

function OptionField ({ spec, value, onSaved }) {
  const initial = spec.kind === 'boolean' ? value === 'true' : (spec.secret ? '' : (value ?? ''))
  const [draft, setDraft] = useState(initial)
  const [outcome, setOutcome] = useState(null) // {ok: true} or {error}
  const [busy, setBusy] = useState(false)
  const id = `opt-${spec.key.replace(/[^A-Za-z0-9_-]/g, '_')}`
  const dirty = spec.secret ? draft !== '' : draft !== initial

  const send = async text => {
    setBusy(true)
    setOutcome(null)
    try {
      await api('/api/option/', { method: 'PUT', body: { key: spec.key, value: text } })
      setOutcome({ ok: true, cleared: text === '' })
      if (spec.secret) setDraft('')
      onSaved(spec.key, text)
    } catch (e) {
      setOutcome({ error: e })
    } finally {
      setBusy(false)
    }
  }
  const save = e => {
    e.preventDefault()
    let text
    try { text = outgoing(spec, draft) } catch (err) { return setOutcome({ error: err }) }
    send(text)
  }
  const clear = () => { if (window.confirm(t('confirmClear', { key: spec.key }))) send('') }
  const format = () => {
    try { setDraft(JSON.stringify(JSON.parse(draft), null, 2)); setOutcome(null) } catch (e) { setOutcome({ error: new Error(t('badJson', { message: e.message })) }) }
  }
  const onInput = e => { setDraft(e.currentTarget.value); setOutcome(null) }

  let input
  if (spec.kind === 'boolean') {
    input = html`<label class="check"><input type="checkbox" id=${id} name=${spec.key} checked=${draft}
        onChange=${e => { setDraft(e.currentTarget.checked); setOutcome(null) }} /> <span>${spec.key}</span></label>`
  } else {
    const control = spec.kind === 'choice'
      ? html`<select id=${id} name=${spec.key} value=${draft} onChange=${onInput}>
          ${(spec.choices || []).map(c => html`<option value=${c}>${c === '' ? '—' : c}</option>`)}
        </select>`
      : multiline(spec)
        ? html`<textarea id=${id} name=${spec.key} value=${draft} onInput=${onInput} spellcheck="false"
            class=${spec.kind === 'json' || spec.kind === 'lines' ? 'code-input' : ''} rows=${spec.kind === 'text' ? 4 : 6}></textarea>`
        : spec.kind === 'integer' || spec.kind === 'number'
          ? html`<input id=${id} name=${spec.key} type="number" inputmode=${spec.kind === 'integer' ? 'numeric' : 'decimal'}
              min=${spec.minimum} max=${spec.maximum} step=${spec.kind === 'integer' ? 1 : 'any'} value=${draft} onInput=${onInput} />`
          : html`<input id=${id} name=${spec.key} type=${spec.secret ? 'password' : 'text'} value=${draft} onInput=${onInput}
              autocomplete=${spec.secret ? 'new-password' : 'off'} placeholder=${spec.secret ? t('secretPlaceholder') : ''} />`
    input = html`<${Field} label=${spec.key} wide>${control}</${Field}>`
  }
  return html`<form class="option" novalidate onSubmit=${save} data-key=${spec.key}>
    <div class="option-input">
      ${input}
      <small class="hint">${hintOf(spec)}</small>
    </div>
    <div class="option-actions">
      <button type="submit" disabled=${busy || !dirty} aria-busy=${busy} aria-label=${t('saveLabel', { key: spec.key })}>${common('save')}</button>
      ${spec.secret
        ? html`<button type="button" class="danger" disabled=${busy} onClick=${clear}>${t('clear')}</button>`
        : null}
      ${spec.kind === 'json' && !spec.secret
        ? html`<button type="button" aria-label=${t('formatLabel', { key: spec.key })} onClick=${format}>${t('format')}</button>`
        : null}
      ${!spec.secret && spec.kind !== 'boolean' && draft !== spec.default
        ? html`<button type="button" aria-label=${t('resetLabel', { key: spec.key })} onClick=${() => { setDraft(spec.default); setOutcome(null) }}>${t('reset')}</button>`
        : null}
    </div>
    <div class="option-outcome" aria-live="polite">
      ${outcome?.ok ? html`<span class="good">${outcome.cleared && spec.secret ? t('cleared') : common('saved')}</span>` : null}
      ${outcome?.error ? html`<${ErrorText} error=${outcome.error} />` : null}
      ${!outcome && dirty && !spec.secret ? html`<span class="muted">${t('changed')}</span>` : null}
    </div>
  </form>`
}

export default function Settings () {
  const { data, error, loading } = useAsync(async () => {
    const [schema, values] = await Promise.all([api('/api/option/schema'), api('/api/option/')])
    return { schema, values: Object.fromEntries(values.map(o => [o.key, o.value])) }
  })
  const [saved, setSaved] = useState({})
  const [filter, setFilter] = useState('')

  const sections = useMemo(() => {
    if (!data) return []
    const needle = filter.trim().toLowerCase()
    const groups = new Map()
    for (const spec of data.schema) {
      if (needle && !spec.key.toLowerCase().includes(needle) && !spec.description.toLowerCase().includes(needle)) continue
      const name = sectionOf(spec.key)
      if (!groups.has(name)) groups.set(name, [])
      groups.get(name).push(spec)
    }
    return ORDER.filter(name => groups.has(name)).map(name => [name, groups.get(name)])
  }, [data, filter])

  const onSaved = (key, text) => setSaved(s => ({ ...s, [key]: text }))
  const count = sections.reduce((n, [, specs]) => n + specs.length, 0)
  const searching = filter.trim() !== ''

  return html`<${Page} title=${t('title')}>
    <${ErrorText} error=${error} />
    ${loading && !data ? html`<p class="loading">${common('loading')}</p>` : null}
    ${data ? html`
      <div class="panel settings-filter">
        <${Field} label=${t('filter')} hint=${t('filterHint')} wide>
          <input type="search" name="filter" value=${filter} onInput=${e => setFilter(e.currentTarget.value)} autocomplete="off" />
        </${Field}>
        <p class="muted" aria-live="polite">${t('matches', { count, total: data.schema.length })}</p>
      </div>
      ${sections.length === 0 ? html`<p class="empty">${t('none')}</p>` : null}
      ${sections.map(([name, specs]) => html`
        <details class="panel settings-section" key=${name} open=${searching || name === 'general' || undefined}>
          <summary><h2>${t(name)} <span class="muted">(${specs.length})</span></h2></summary>
          ${specs.map(spec => html`<${OptionField} key=${spec.key} spec=${spec}
              value=${spec.key in saved ? saved[spec.key] : data.values[spec.key]} onSaved=${onSaved} />`)}
        </details>`)}
    ` : null}
  </${Page}>`
}
