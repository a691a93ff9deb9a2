// Usage logs (/console/log): the caller's own (/api/log/self) or, for admins, everyone's
// (/api/log/), with new-api's filters, paging, the filter's quota/RPM/TPM, each row's
// details on demand, and an export of every row the filter matches (CSV or JSON Lines).
import { useState } from 'preact/hooks'
import { html } from '../lib/html.js'
import { api, download } from '../lib/api.js'
import { translator } from '../lib/i18n.js'
import { numberText, quotaText, timeText } from '../lib/format.js'
import { ROLE_ADMIN, useSession } from '../lib/session.js'
import { t as common } from '../lib/strings.js'
import { ErrorText, Field, Page, Pager, formValues, toast, useAsync } from '../lib/ui.js'
import { LogTable, otherText } from './logs/table.js'

export const strings = {
  en: {
    title: 'Usage logs',
    caption: 'Log entries, newest first',
    start: 'From',
    end: 'Until',
    endHint: 'Empty: until now.',
    type: 'Type',
    type0: 'All', type1: 'Top-up', type2: 'Consumption', type3: 'Management', type4: 'System', type5: 'Error', type6: 'Refund',
    model: 'Model',
    key: 'API key',
    group: 'Group',
    requestId: 'Request ID',
    username: 'Username',
    channel: 'Channel ID',
    reset: 'Reset',
    time: 'Time',
    user: 'User',
    useTime: 'Time taken',
    stream: 'stream',
    prompt: 'Prompt',
    completion: 'Completion',
    quota: 'Quota',
    statQuota: 'Quota spent',
    rpm: 'RPM',
    tpm: 'TPM',
    stats: 'Figures for this filter',
    details: 'Details',
    detailsOf: 'Details of log {id}',
    content: 'Content',
    ip: 'IP',
    other: 'Other details',
    pageSize: 'Rows per page',
    format: 'Export format',
    export: 'Export',
    exporting: 'Exporting the matching logs…',
    exported: 'Exported {file}.',
    exportFigures: 'Rows: {rows}, {size} received.',
    exportFailed: 'The export failed: {message}'
  },
  'zh-CN': {
    title: '使用日志',
    caption: '日志记录，最新的在前',
    start: '起始时间',
    end: '结束时间',
    endHint: '留空：截至现在。',
    type: '类型',
    type0: '全部', type1: '充值', type2: '消费', type3: '管理', type4: '系统', type5: '错误', type6: '退款',
    model: '模型名称',
    key: '令牌名称',
    group: '分组',
    requestId: '请求 ID',
    username: '用户名称',
    channel: '渠道 ID',
    reset: '重置',
    time: '时间',
    user: '用户',
    useTime: '用时',
    stream: '流',
    prompt: '提示',
    completion: '补全',
    quota: '花费',
    statQuota: '消耗额度',
    rpm: 'RPM',
    tpm: 'TPM',
    stats: '当前筛选的统计',
    details: '详情',
    detailsOf: '日志 {id} 的详情',
    content: '内容',
    ip: 'IP',
    other: '其他信息',
    pageSize: '每页条数',
    format: '导出格式',
    export: '导出',
    exporting: '正在导出符合条件的日志…',
    exported: '已导出 {file}。',
    exportFigures: '已接收 {rows} 行，{size}。',
    exportFailed: '导出失败：{message}'
  }
}
const t = translator(strings)

const TYPES = [0, 1, 2, 3, 4, 5, 6]
const SIZES = [10, 20, 50, 100]

const pad = n => String(n).padStart(2, '0')
/** A <input type="datetime-local"> value for a Date (local time). */
const localInput = d => `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`
const seconds = value => (value ? Math.floor(new Date(value).getTime() / 1000) : undefined)

function todayStart () {
  const d = new Date()
  d.setHours(0, 0, 0, 0)
  return localInput(d)
}

const initial = () => ({ start: todayStart(), end: '', type: '0' })

/** The form's values as the API's query parameters. */
function toParams (f, admin) {
  const params = {
    type: f.type && f.type !== '0' ? f.type : undefined,
    start_timestamp: seconds(f.start),
    end_timestamp: seconds(f.end),
    model_name: f.model_name,
    token_name: f.token_name,
    group: f.group,
    request_id: f.request_id
  }
  if (admin) Object.assign(params, { username: f.username, channel: f.channel })
  return params
}

function Detail ({ row, status }) {
  return html`<dl class="log-facts">
    <dt>${t('requestId')}</dt><dd><code>${row.request_id || '—'}</code></dd>
    ${row.channel ? html`<dt>${t('channel')}</dt><dd>${row.channel}${row.channel_name ? ` · ${row.channel_name}` : ''}</dd>` : null}
    ${row.ip ? html`<dt>${t('ip')}</dt><dd>${row.ip}</dd>` : null}
    <dt>${t('quota')}</dt><dd>${quotaText(row.quota, status)} (${numberText(row.quota)})</dd>
    ${row.content ? html`<dt>${t('content')}</dt><dd class="log-content">${row.content}</dd>` : null}
    ${row.other ? html`<dt>${t('other')}</dt><dd><pre class="log-other">${otherText(row.other)}</pre></dd>` : null}
  </dl>`
}

/** Uncontrolled (a reload never undoes typing); Reset mounts it afresh from `values`. */
function Filters ({ admin, values, onSearch, onReset }) {
  const submit = e => {
    e.preventDefault()
    onSearch(formValues(e.currentTarget))
  }
  const text = (name, label, max = 64) => html`<${Field} label=${label}>
    <input name=${name} maxlength=${max} autocomplete="off" />
  </${Field}>`
  return html`<form class="panel form-grid log-filters" onSubmit=${submit} onReset=${e => { e.preventDefault(); onReset() }}>
    <${Field} label=${t('start')}><input type="datetime-local" name="start" defaultValue=${values.start} /></${Field}>
    <${Field} label=${t('end')} hint=${t('endHint')}><input type="datetime-local" name="end" /></${Field}>
    <${Field} label=${t('type')}>
      <select name="type">
        ${TYPES.map(n => html`<option value=${String(n)}>${t(`type${n}`)}</option>`)}
      </select>
    </${Field}>
    ${text('model_name', t('model'), 255)}
    ${text('token_name', t('key'))}
    ${text('group', t('group'))}
    ${text('request_id', t('requestId'))}
    ${admin ? text('username', t('username')) : null}
    ${admin ? html`<${Field} label=${t('channel')}>
      <input name="channel" type="number" min="1" /></${Field}>` : null}
    <div class="row">
      <button type="submit">${common('search')}</button>
      <button type="reset">${t('reset')}</button>
    </div>
  </form>`
}

/** Counts the rows of an export as its text arrives: JSON Lines' lines; CSV's line ends
 *  outside quotes (a quoted cell may hold a line break), less the header line. */
export function rowCounter (format) {
  let ends = 0
  let quoted = false
  return text => {
    for (const ch of text) {
      if (ch === '"' && format === 'csv') quoted = !quoted
      else if (ch === '\n' && !quoted) ends++
    }
    return format === 'csv' ? Math.max(0, ends - 1) : ends
  }
}

const sizeText = bytes => (bytes < 1024 ? `${bytes} B` : `${(bytes / 1024).toFixed(1)} KB`)

function Export ({ admin, params }) {
  const [format, setFormat] = useState('csv')
  // null | {running, rows, bytes} | {done: file, rows, bytes} | {error: message}
  const [state, setState] = useState(null)
  const run = async () => {
    const file = `logs-${new Date().toISOString().slice(0, 19).replace(/[-:T]/g, '')}.${format}`
    const count = rowCounter(format)
    let rows = 0
    setState({ running: true, rows: 0, bytes: 0 })
    try {
      const bytes = await download(admin ? '/api/log/export' : '/api/log/self/export', { ...params, format }, file,
        (received, text) => { rows = count(text); setState({ running: true, rows, bytes: received }) })
      setState({ done: file, rows, bytes })
    } catch (e) {
      setState({ error: e.message })
      toast(t('exportFailed', { message: e.message }), 'bad')
    }
  }
  const figures = s => t('exportFigures', { rows: numberText(s.rows), size: sizeText(s.bytes) })
  return html`<div class="log-export">
    <label class="check"><span>${t('format')}</span>
      <select name="format" value=${format} onChange=${e => setFormat(e.target.value)}>
        <option value="csv">CSV</option>
        <option value="jsonl">JSON Lines</option>
      </select></label>
    <button type="button" onClick=${run} disabled=${Boolean(state?.running)} aria-busy=${Boolean(state?.running)}>${t('export')}</button>
    <p class="export-status" role="status" aria-live="polite" aria-busy=${Boolean(state?.running)}>
      ${state?.running ? html`<progress aria-label=${t('exporting')}></progress> ${t('exporting')} ${figures(state)}` : null}
      ${state?.done ? `${t('exported', { file: state.done })} ${figures(state)}` : null}
      ${state?.error ? html`<span class="error">${t('exportFailed', { message: state.error })}</span>` : null}
    </p>
  </div>`
}

export default function Logs () {
  const { status, user } = useSession()
  const admin = user.role >= ROLE_ADMIN
  const [values, setValues] = useState(initial)
  const [resets, setResets] = useState(0)
  const [page, setPage] = useState(1)
  const [size, setSize] = useState(10)
  const params = toParams(values, admin)
  const base = admin ? '/api/log' : '/api/log/self'
  const { data, error, loading } = useAsync(() => Promise.all([
    api(admin ? '/api/log/' : '/api/log/self', { params: { ...params, p: page, page_size: size } }),
    api(`${base}/stat`, { params })
  ]), [JSON.stringify(params), page, size])
  const [list, stat] = data || [null, null]

  const columns = [
    { label: t('time'), render: r => timeText(r.created_at) },
    ...(admin ? [
      { label: t('channel'), render: r => r.channel || '—' },
      { label: t('user'), key: 'username' }
    ] : []),
    { label: t('key'), key: 'token_name' },
    { label: t('group'), key: 'group' },
    { label: t('type'), render: r => html`<span class=${`badge log-type-${r.type}`}>${t(`type${r.type}`)}</span>` },
    { label: t('model'), key: 'model_name' },
    { label: t('useTime'), render: r => html`${r.use_time}s${r.is_stream ? html` <span class="badge">${t('stream')}</span>` : null}` },
    { label: t('prompt'), render: r => numberText(r.prompt_tokens) },
    { label: t('completion'), render: r => numberText(r.completion_tokens) },
    { label: t('quota'), render: r => quotaText(r.quota, status) }
  ]
  const search = v => { setValues(v); setPage(1) }

  return html`<${Page} title=${t('title')}>
    <${Filters} key=${resets} admin=${admin} values=${values} onSearch=${search}
      onReset=${() => { search(initial()); setResets(n => n + 1) }} />
    <div class="log-bar panel">
      <h2 class="visually-hidden">${t('stats')}</h2>
      <dl class="stat-bar" aria-busy=${loading}>
        <div><dt>${t('statQuota')}</dt><dd>${stat ? quotaText(stat.quota, status) : '…'}</dd></div>
        <div><dt>${t('rpm')}</dt><dd>${stat ? numberText(stat.rpm) : '…'}</dd></div>
        <div><dt>${t('tpm')}</dt><dd>${stat ? numberText(stat.tpm) : '…'}</dd></div>
      </dl>
      <${Export} admin=${admin} params=${params} />
    </div>
    <${ErrorText} error=${error} />
    ${loading && !list ? html`<p class="loading" role="status">${common('loading')}</p>` : null}
    ${list ? html`<div aria-busy=${loading}>
      <${LogTable} rows=${list.items} columns=${columns} caption=${t('caption')} t=${t}
        detail=${row => html`<${Detail} row=${row} status=${status} />`} />
      <div class="row log-paging">
        <label class="check"><span>${t('pageSize')}</span>
          <select name="page_size" value=${String(size)} onChange=${e => { setSize(Number(e.target.value)); setPage(1) }}>
            ${SIZES.map(n => html`<option value=${String(n)}>${n}</option>`)}
          </select></label>
        <${Pager} page=${list.page || page} pageSize=${size} total=${list.total} onPage=${setPage} />
      </div>
    </div>` : null}
  </${Page}>`
}
