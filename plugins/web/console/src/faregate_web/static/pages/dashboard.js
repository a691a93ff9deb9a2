// The dashboard (/console): balance and use, requests and tokens per minute, and charts of
// consumption over time by model and by API key, from /api/data (asked with by_token=true,
// so one call gives both dimensions). Admins may look at the whole site or one user.
import { useMemo, useState } from 'preact/hooks'
import { html } from '../lib/html.js'
import { api } from '../lib/api.js'
import { translator } from '../lib/i18n.js'
import { numberText, quotaText } from '../lib/format.js'
import { ROLE_ADMIN, useSession } from '../lib/session.js'
import { t as common } from '../lib/strings.js'
import { CopyButton, ErrorText, Field, Page, Table, useAsync } from '../lib/ui.js'
import { UsageChart } from './dashboard/chart.js'
import { RANGES, buckets, seriesBy, stepOf } from './dashboard/series.js'

export const strings = {
  en: {
    title: 'Dashboard',
    balance: 'Balance',
    used: 'Used quota',
    requests: 'Requests',
    spent: 'Spent in range',
    rpm: 'RPM (last minute)',
    tpm: 'TPM (last minute)',
    range: 'Time range',
    day: 'Last 24 hours',
    week: 'Last 7 days',
    month: 'Last 30 days',
    metric: 'Show',
    quota: 'Quota',
    count: 'Requests',
    token_used: 'Tokens',
    scope: 'Whose usage',
    mine: 'Mine',
    site: 'The whole site',
    username: 'Username (empty: everyone)',
    byModel: 'Usage by model',
    byKey: 'Usage by API key',
    byModelCaption: '{metric} by model · {range}',
    byKeyCaption: '{metric} by API key · {range}',
    model: 'Model',
    key: 'API key',
    noKey: '(no key)',
    other: 'Other',
    noUsage: 'No usage in this range.',
    topUsers: 'Top users in range',
    user: 'User',
    tokens: 'Tokens',
    apiBase: 'API base URL',
    apiHint: 'OpenAI-compatible clients use {url}/v1 as their base URL; send your API key as a Bearer token.'
  },
  'zh-CN': {
    title: '数据看板',
    balance: '当前余额',
    used: '历史消耗',
    requests: '请求次数',
    spent: '区间内消耗',
    rpm: 'RPM（最近一分钟）',
    tpm: 'TPM（最近一分钟）',
    range: '时间范围',
    day: '最近 24 小时',
    week: '最近 7 天',
    month: '最近 30 天',
    metric: '显示',
    quota: '额度',
    count: '请求次数',
    token_used: 'Token 数',
    scope: '统计范围',
    mine: '我的',
    site: '全站',
    username: '用户名（留空：所有用户）',
    byModel: '模型消耗分布',
    byKey: '令牌消耗分布',
    byModelCaption: '按模型统计的{metric}，{range}',
    byKeyCaption: '按令牌统计的{metric}，{range}',
    model: '模型',
    key: '令牌',
    noKey: '（无令牌）',
    other: '其他',
    noUsage: '此时间范围内没有使用记录。',
    topUsers: '区间内消耗最多的用户',
    user: '用户',
    tokens: 'Token 数',
    apiBase: 'API 地址',
    apiHint: 'OpenAI 兼容的客户端请使用 {url}/v1 作为 Base URL，并以 Bearer 方式发送你的令牌。'
  }
}
const t = translator(strings)

async function load ({ range, scope, username, admin }) {
  const end = Math.floor(Date.now() / 1000)
  const start = end - RANGES[range]
  const span = { start_timestamp: start, end_timestamp: end }
  const site = admin && scope === 'site'
  const who = site && username ? { username } : {}
  const [me, rows, stat, users] = await Promise.all([
    api('/api/user/self'),
    api(site ? '/api/data/' : '/api/data/self', { params: { ...span, ...who, by_token: true } }),
    api(site ? '/api/log/stat' : '/api/log/self/stat', { params: { start_timestamp: start, ...who } }),
    site && !username ? api('/api/data/users', { params: span }) : Promise.resolve(null)
  ])
  return { me, rows: rows || [], stat, users, start, end, range }
}

function Card ({ label, value }) {
  return html`<div class="card"><div class="label">${label}</div><div class="value">${value}</div></div>`
}

export default function Dashboard () {
  const { status, user } = useSession()
  const admin = user.role >= ROLE_ADMIN
  const [range, setRange] = useState('week')
  const [metric, setMetric] = useState('quota')
  const [scope, setScope] = useState('mine')
  const [username, setUsername] = useState('')
  const { data, error, loading, reload } = useAsync(() => load({ range, scope, username, admin }), [range, scope, username])

  const format = metric === 'quota' ? v => quotaText(v, status) : numberText
  const charts = useMemo(() => {
    if (!data) return null
    const step = stepOf(data.range)
    const xs = buckets(data.start, data.end, step)
    return {
      step,
      xs,
      models: seriesBy(data.rows, r => r.model_name || '—', xs, step, metric, t('other')),
      keys: seriesBy(data.rows, r => r.token_name || t('noKey'), xs, step, metric, t('other'))
    }
  }, [data, metric])

  const base = (status.server_address || window.location.origin).replace(/\/+$/, '')
  const totals = first => [
    { label: first, render: s => s.label },
    { label: t('count'), render: s => numberText(s.count) },
    { label: t('tokens'), render: s => numberText(s.token_used) },
    { label: t('quota'), render: s => quotaText(s.quota, status) }
  ]
  const pickUser = e => { e.preventDefault(); setUsername(e.currentTarget.elements.username.value.trim()) }

  return html`<${Page} title=${t('title')}
      actions=${html`<button type="button" onClick=${reload} disabled=${loading} aria-busy=${loading}>${common('refresh')}</button>`}>
    <div class="panel dash-controls">
      <div class="form-grid">
        <${Field} label=${t('range')}>
          <select name="range" value=${range} onChange=${e => setRange(e.target.value)}>
            ${Object.keys(RANGES).map(r => html`<option value=${r}>${t(r)}</option>`)}
          </select>
        </${Field}>
        <${Field} label=${t('metric')}>
          <select name="metric" value=${metric} onChange=${e => setMetric(e.target.value)}>
            ${['quota', 'count', 'token_used'].map(m => html`<option value=${m}>${t(m)}</option>`)}
          </select>
        </${Field}>
        ${admin ? html`<${Field} label=${t('scope')}>
          <select name="scope" value=${scope} onChange=${e => setScope(e.target.value)}>
            <option value="mine">${t('mine')}</option>
            <option value="site">${t('site')}</option>
          </select>
        </${Field}>` : null}
      </div>
      ${admin && scope === 'site' ? html`<form class="row dash-user" onSubmit=${pickUser}>
        <${Field} label=${t('username')}><input name="username" maxlength="64" autocomplete="off" /></${Field}>
        <button type="submit">${common('search')}</button>
      </form>` : null}
    </div>
    <${ErrorText} error=${error} />
    ${loading && !data ? html`<p class="loading" role="status">${common('loading')}</p>` : null}
    ${data ? html`
      <div class="cards" aria-busy=${loading}>
        <${Card} label=${t('balance')} value=${quotaText(data.me.quota, status)} />
        <${Card} label=${t('used')} value=${quotaText(data.me.used_quota, status)} />
        <${Card} label=${t('requests')} value=${numberText(data.me.request_count)} />
        <${Card} label=${t('spent')} value=${quotaText(data.stat.quota, status)} />
        <${Card} label=${t('rpm')} value=${numberText(data.stat.rpm)} />
        <${Card} label=${t('tpm')} value=${numberText(data.stat.tpm)} />
      </div>
      <div class="dash-charts">
        <${UsageChart} id="chart-models" caption=${t('byModelCaption', { metric: t(metric), range: t(data.range) })}
          xs=${charts.xs} series=${charts.models} format=${format} step=${charts.step}
          columns=${totals(t('model'))} emptyText=${t('noUsage')} />
        <${UsageChart} id="chart-keys" caption=${t('byKeyCaption', { metric: t(metric), range: t(data.range) })}
          xs=${charts.xs} series=${charts.keys} format=${format} step=${charts.step}
          columns=${totals(t('key'))} emptyText=${t('noUsage')} />
      </div>
      ${data.users && data.users.length ? html`<section class="panel">
        <h2 class="panel-title">${t('topUsers')}</h2>
        <${Table} caption=${t('topUsers')} rows=${data.users} rowKey=${u => u.user_id} columns=${[
          { label: t('user'), render: u => u.username },
          { label: t('count'), render: u => numberText(u.count) },
          { label: t('tokens'), render: u => numberText(u.token_used) },
          { label: t('quota'), render: u => quotaText(u.quota, status) }
        ]} />
      </section>` : null}` : null}
    <section class="panel api-base">
      <h2 class="panel-title">${t('apiBase')}</h2>
      <div class="row"><code class="secret">${base}</code><${CopyButton} text=${base} label=${common('copy')} /></div>
      <p class="hint">${t('apiHint', { url: base })}</p>
    </section>
  </${Page}>`
}
