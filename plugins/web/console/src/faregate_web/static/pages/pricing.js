// The public price list, as new-api's pricing page: every model a channel serves in the
// visitor's usable groups, priced in the chosen group. new-api's units: model ratio 1 is
// $2 per 1M input tokens, output costs the completion ratio times more; a fixed price
// (quota_type 1) is US dollars per call; both times the group's ratio. Shown in the
// site's currency (USD, or CNY / a custom one at the site's rate).
import { useState } from 'preact/hooks'
import { html } from '../lib/html.js'
import { loadPricing } from '../lib/api.js'
import { moneyText } from '../lib/format.js'
import { translator } from '../lib/i18n.js'
import { t as common } from '../lib/strings.js'
import { useSession } from '../lib/session.js'
import { CopyButton, ErrorText, Page, Table, useAsync } from '../lib/ui.js'

export const strings = {
  en: {
    title: 'Model pricing',
    search: 'Search models or vendors',
    group: 'Group',
    groupOption: '{name} (×{ratio})',
    unit: 'Unit',
    per1m: 'per 1M tokens',
    per1k: 'per 1K tokens',
    summary: '{count} models in group {group}; group ratio ×{ratio}.',
    noGroups: 'No group is open to you.',
    model: 'Model',
    vendor: 'Vendor',
    billing: 'Billing',
    perToken: 'Per token',
    perCall: 'Per call',
    input: 'Input',
    output: 'Output',
    cached: 'Cached input',
    price: 'Price',
    callPrice: '{price} per call',
    groups: 'Groups',
    ratios: 'Ratios',
    modelRatio: 'model ×{value}',
    completionRatio: 'output ×{value}',
    groupRatio: 'group ×{value}'
  },
  'zh-CN': {
    title: '模型价格',
    search: '搜索模型或供应商',
    group: '分组',
    groupOption: '{name}（×{ratio}）',
    unit: '单位',
    per1m: '每 1M tokens',
    per1k: '每 1K tokens',
    summary: '分组 {group} 中共 {count} 个模型；分组倍率 ×{ratio}。',
    noGroups: '没有可用的分组。',
    model: '模型',
    vendor: '供应商',
    billing: '计费类型',
    perToken: '按量计费',
    perCall: '按次计费',
    input: '输入',
    output: '输出',
    cached: '缓存输入',
    price: '价格',
    callPrice: '每次 {price}',
    groups: '可用分组',
    ratios: '倍率',
    modelRatio: '模型 ×{value}',
    completionRatio: '补全 ×{value}',
    groupRatio: '分组 ×{value}'
  }
}
const t = translator(strings)

// new-api: model ratio 1 = $0.002 per 1K tokens = $2 per 1M
const USD_PER_MILLION_AT_RATIO_1 = 2

const money = (usd, status) => moneyText(usd, status, 6)

const ratioText = n => String(Number(Number(n).toFixed(6)))

function pickGroup (body, user) {
  const names = Object.keys(body.group_ratio || {})
  for (const want of [user?.group, 'default']) if (want && names.includes(want)) return want
  return names[0] || ''
}

export default function Pricing () {
  const { status, user } = useSession()
  const pricing = useAsync(loadPricing, [user?.id])
  const [query, setQuery] = useState('')
  const [chosen, setChosen] = useState('')
  const [perK, setPerK] = useState(false)

  const body = pricing.data
  const group = body ? (chosen && chosen in body.group_ratio ? chosen : pickGroup(body, user)) : ''
  const groupRatio = body ? Number(body.group_ratio[group] ?? 1) : 1
  const needle = query.trim().toLowerCase()
  const rows = body ? body.data.filter(m => (m.enable_groups || []).includes(group) &&
    (!needle || m.model_name.toLowerCase().includes(needle) || (m.owner_by || '').toLowerCase().includes(needle))) : []
  const scale = perK ? 1 / 1000 : 1
  const tokenPrice = (m, times = 1) => money(m.model_ratio * USD_PER_MILLION_AT_RATIO_1 * groupRatio * times * scale, status)

  const columns = [
    {
      label: t('model'),
      render: m => html`<div class="row adm-nowrap"><code>${m.model_name}</code>
        <${CopyButton} text=${m.model_name} label=${html`${common('copy')}<span class="visually-hidden"> ${m.model_name}</span>`} /></div>`
    },
    rows.some(m => m.owner_by) ? { label: t('vendor'), render: m => m.owner_by || '—' } : null,
    { label: t('billing'), render: m => html`<span class="badge adm-nowrap">${m.quota_type === 1 ? t('perCall') : t('perToken')}</span>` },
    {
      label: t('price'),
      render: m => (m.quota_type === 1
        ? html`<span class="adm-price">${t('callPrice', { price: money(m.model_price * groupRatio, status) })}</span>`
        : html`<span class="adm-price adm-nowrap">${t('input')} ${tokenPrice(m)}</span><br />
            <span class="adm-price adm-nowrap">${t('output')} ${tokenPrice(m, m.completion_ratio)}</span>
            ${m.cache_ratio !== undefined && m.cache_ratio !== null
              ? html`<br /><span class="muted adm-nowrap">${t('cached')} ${tokenPrice(m, m.cache_ratio)}</span>` : null}`)
    },
    { label: t('groups'), render: m => (m.enable_groups || []).map(g => html`<span class="badge">${g}</span> `) },
    {
      label: t('ratios'),
      render: m => html`<span class="muted">${m.quota_type === 1 ? null
        : html`${t('modelRatio', { value: ratioText(m.model_ratio) })}<br />${t('completionRatio', { value: ratioText(m.completion_ratio) })}<br />`}
        ${t('groupRatio', { value: ratioText(groupRatio) })}</span>`
    }
  ].filter(Boolean)
  const groups = body ? Object.keys(body.group_ratio) : []
  return html`<${Page} title=${t('title')}>
    <form class="adm-toolbar" role="search" onSubmit=${e => e.preventDefault()}>
      <label class="adm-grow"><span class="visually-hidden">${t('search')}</span>
        <input name="q" type="search" maxlength="100" placeholder=${t('search')} value=${query}
          onInput=${e => setQuery(e.currentTarget.value)} /></label>
      <label class="adm-inline"><span>${t('group')}</span>
        <select name="group" onChange=${e => setChosen(e.currentTarget.value)}>
          ${groups.map(g => html`<option value=${g} selected=${g === group}>
            ${t('groupOption', { name: g, ratio: ratioText(body.group_ratio[g]) })}${body.usable_group?.[g] && body.usable_group[g] !== g ? ` · ${body.usable_group[g]}` : ''}</option>`)}
        </select></label>
      <label class="adm-inline"><span>${t('unit')}</span>
        <select name="unit" onChange=${e => setPerK(e.currentTarget.value === 'k')}>
          <option value="m" selected=${!perK}>${t('per1m')}</option>
          <option value="k" selected=${perK}>${t('per1k')}</option>
        </select></label>
    </form>
    <${ErrorText} error=${pricing.error} />
    ${body && groups.length === 0 ? html`<p class="muted">${t('noGroups')}</p>` : null}
    ${body && groups.length ? html`<p class="muted" role="status">${t('summary', { count: rows.length, group, ratio: ratioText(groupRatio) })}
        ${' '}(${perK ? t('per1k') : t('per1m')})</p>
      <${Table} caption=${t('title')} columns=${columns} rows=${rows} rowKey=${m => m.model_name} />`
      : pricing.loading ? html`<p class="loading">${common('loading')}</p>` : null}
  </${Page}>`
}
