// The playground: pick a group and a model, set the sampling parameters, and chat through
// /pg/chat/completions with the login session (billed and logged like any request). The
// reply streams in and can be stopped; the conversation continues turn after turn. The
// models offered are the user's (/api/user/models) that the chosen group serves (each
// model's enable_groups in /api/pricing; `auto`: any of its groups), picked again when the
// group changes.
import { useEffect, useRef, useState } from 'preact/hooks'
import { html } from '../lib/html.js'
import { api, headers, loadPricing } from '../lib/api.js'
import { translator } from '../lib/i18n.js'
import { renderMarkdown } from '../lib/markdown.js'
import { sseData } from '../lib/sse.js'
import { useSession } from '../lib/session.js'
import { ErrorText, Field, Page, useAsync } from '../lib/ui.js'

export const strings = {
  en: {
    title: 'Playground',
    group: 'Group',
    ownGroup: 'My account\'s group',
    model: 'Model',
    noModels: 'No model is available to you yet.',
    system: 'System prompt',
    stream: 'Stream the reply',
    temperature: 'Temperature',
    top_p: 'Top P',
    frequency_penalty: 'Frequency penalty',
    presence_penalty: 'Presence penalty',
    max_tokens: 'Max tokens',
    use: 'Send {name}',
    message: 'Message',
    messageHint: 'Ctrl+Enter sends.',
    send: 'Send',
    stop: 'Stop',
    clear: 'New conversation',
    you: 'You',
    assistant: 'Assistant',
    thinking: 'Reasoning',
    stopped: '(stopped)',
    failed: 'The request failed: {message}',
    conversation: 'Conversation'
  },
  'zh-CN': {
    title: '操练场',
    group: '分组',
    ownGroup: '账户所在分组',
    model: '模型',
    noModels: '暂无可用模型。',
    system: '系统提示词',
    stream: '流式输出',
    temperature: '温度 (Temperature)',
    top_p: 'Top P',
    frequency_penalty: '频率惩罚 (Frequency Penalty)',
    presence_penalty: '存在惩罚 (Presence Penalty)',
    max_tokens: '最大 Token 数 (Max Tokens)',
    use: '发送 {name}',
    message: '消息',
    messageHint: 'Ctrl+Enter 发送。',
    send: '发送',
    stop: '停止',
    clear: '新对话',
    you: '你',
    assistant: '助手',
    thinking: '思考过程',
    stopped: '（已停止）',
    failed: '请求失败：{message}',
    conversation: '对话'
  }
}
const t = translator(strings)

// new-api's defaults; each is sent only when its box is ticked
const PARAMS = [
  ['temperature', 0.7, 0, 2, 0.1],
  ['top_p', 1, 0, 1, 0.05],
  ['frequency_penalty', 0, -2, 2, 0.1],
  ['presence_penalty', 0, -2, 2, 0.1],
  ['max_tokens', 4096, 1, 1000000, 1]
]
const SAVED = 'playground'

function loadConfig () {
  try { return JSON.parse(localStorage.getItem(SAVED)) || {} } catch { return {} }
}

/** The user's models (`mine`, /api/user/models) that `group` serves, by /api/pricing. */
function modelsOf (group, [mine, pricing]) {
  const serving = new Set(group === 'auto' ? pricing.auto_groups || [] : [group])
  const served = new Set((pricing.data || []).filter(p => (p.enable_groups || []).some(g => serving.has(g)))
    .map(p => p.model_name))
  return (mine || []).filter(name => served.has(name))
}

function Message ({ m }) {
  if (m.role === 'user') {
    return html`<article class="message user"><span class="role">${t('you')}</span>${m.content}</article>`
  }
  return html`<article class="message assistant" aria-busy=${m.pending ? 'true' : 'false'}>
    <span class="role">${t('assistant')}</span>
    ${m.reasoning ? html`<details><summary>${t('thinking')}</summary><div class="muted">${m.reasoning}</div></details>` : null}
    <div class="content" dangerouslySetInnerHTML=${{ __html: renderMarkdown(m.content) }} />
    ${m.error ? html`<p class="error" role="alert">${t('failed', { message: m.error })}</p>` : null}
    ${m.stopped ? html`<p class="muted">${t('stopped')}</p>` : null}
  </article>`
}

export default function Playground () {
  const saved = loadConfig()
  const { user } = useSession()
  const [config, setConfig] = useState({ group: '', model: '', system: '', stream: true, on: {}, values: {}, ...saved })
  const [messages, setMessages] = useState([])
  const [busy, setBusy] = useState(false)
  const controller = useRef(null)
  const bottom = useRef(null)
  const groups = useAsync(() => api('/api/user/self/groups'), [])
  const group = config.group || user.group
  // neither answer depends on the group: loaded once, the group's share picked in render
  const models = useAsync(() => Promise.all([api('/api/user/models'), loadPricing()]), [])

  useEffect(() => { localStorage.setItem(SAVED, JSON.stringify(config)) }, [config])
  useEffect(() => { bottom.current?.scrollIntoView({ block: 'end' }) }, [messages])
  useEffect(() => () => controller.current?.abort(), [])
  const modelList = models.data ? modelsOf(group, models.data) : []
  const model = modelList.includes(config.model) ? config.model : (modelList[0] || '')
  const groupNames = groups.data && typeof groups.data === 'object' ? Object.keys(groups.data) : []
  const set = patch => setConfig(c => ({ ...c, ...patch }))

  const body = history => {
    const out = { model, messages: history.map(({ role, content }) => ({ role, content })), stream: config.stream }
    if (config.system.trim()) out.messages.unshift({ role: 'system', content: config.system })
    if (config.group) out.group = config.group
    for (const [name, fallback] of PARAMS) {
      if (config.on[name]) out[name] = Number(config.values[name] ?? fallback)
    }
    return out
  }

  const update = fn => setMessages(list => {
    const copy = list.slice()
    copy[copy.length - 1] = fn({ ...copy[copy.length - 1] })
    return copy
  })

  const send = async text => {
    const history = [...messages.filter(m => !m.error), { role: 'user', content: text }]
    setMessages([...history, { role: 'assistant', content: '', pending: true }])
    setBusy(true)
    const abort = new AbortController()
    controller.current = abort
    try {
      const res = await fetch('/pg/chat/completions', {
        method: 'POST',
        credentials: 'same-origin',
        headers: headers({ 'Content-Type': 'application/json', Accept: config.stream ? 'text/event-stream' : 'application/json' }),
        body: JSON.stringify(body(history)),
        signal: abort.signal
      })
      if (!res.ok) {
        let message = `HTTP ${res.status}`
        try { const err = await res.json(); message = err.error?.message || err.message || message } catch {}
        throw new Error(message)
      }
      if (config.stream) {
        for await (const data of sseData(res)) {
          if (data === '[DONE]') break
          const chunk = JSON.parse(data)
          if (chunk.error) throw new Error(chunk.error.message || 'error')
          const delta = chunk.choices?.[0]?.delta || {}
          const reasoning = delta.reasoning_content || delta.reasoning || ''
          if (delta.content || reasoning) {
            update(m => ({ ...m, content: m.content + (delta.content || ''), reasoning: (m.reasoning || '') + reasoning }))
          }
        }
      } else {
        const answer = await res.json()
        const msg = answer.choices?.[0]?.message || {}
        update(m => ({ ...m, content: msg.content || '', reasoning: msg.reasoning_content || '' }))
      }
      update(m => ({ ...m, pending: false }))
    } catch (e) {
      if (abort.signal.aborted) update(m => ({ ...m, pending: false, stopped: true }))
      else update(m => ({ ...m, pending: false, error: e.message }))
    } finally {
      controller.current = null
      setBusy(false)
    }
  }

  const submit = e => {
    e.preventDefault()
    const area = e.currentTarget.elements.message
    const text = area.value.trim()
    if (!text || busy || !model) return
    area.value = ''
    send(text)
  }
  const keydown = e => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
      e.preventDefault()
      e.currentTarget.form.requestSubmit()
    }
  }

  return html`<${Page} title=${t('title')}>
    <${ErrorText} error=${groups.error || models.error} />
    <div class="chat">
      <aside class="chat-settings panel" aria-label=${t('title')}>
        <${Field} label=${t('group')}>
          <select name="group" value=${config.group} onChange=${e => set({ group: e.target.value })}>
            <option value="">${t('ownGroup')}</option>
            ${groupNames.map(g => html`<option value=${g}>${g}${groups.data[g]?.desc ? ` · ${groups.data[g].desc}` : ''}</option>`)}
          </select>
        </${Field}>
        <${Field} label=${t('model')}>
          <select name="model" value=${model} onChange=${e => set({ model: e.target.value })}>
            ${modelList.map(m => html`<option value=${m}>${m}</option>`)}
          </select>
        </${Field}>
        ${!models.loading && modelList.length === 0 ? html`<p class="muted">${t('noModels')}</p>` : null}
        ${PARAMS.map(([name, fallback, min, max, step]) => html`<div class="param">
          <input type="checkbox" id=${`on-${name}`} checked=${!!config.on[name]} aria-label=${t('use', { name: t(name) })}
            onChange=${e => set({ on: { ...config.on, [name]: e.target.checked } })} />
          <label for=${`p-${name}`}>${t(name)}</label>
          <span></span>
          <input id=${`p-${name}`} type="number" min=${min} max=${max} step=${step} disabled=${!config.on[name]}
            value=${config.values[name] ?? fallback}
            onInput=${e => set({ values: { ...config.values, [name]: e.target.value } })} />
        </div>`)}
        <label class="check"><input type="checkbox" checked=${config.stream} onChange=${e => set({ stream: e.target.checked })} /> ${t('stream')}</label>
        <${Field} label=${t('system')}>
          <textarea name="system" value=${config.system} onInput=${e => set({ system: e.target.value })} maxlength="20000" />
        </${Field}>
      </aside>
      <div class="chat-main">
        <section class="messages" aria-label=${t('conversation')}>
          ${messages.map((m, i) => html`<${Message} key=${i} m=${m} />`)}
          <div ref=${bottom} />
        </section>
        <form class="composer" onSubmit=${submit}>
          <${Field} label=${t('message')} hint=${t('messageHint')} wide>
            <textarea name="message" onKeyDown=${keydown} maxlength="100000" />
          </${Field}>
          <div class="row">
            ${busy ? html`<button type="button" class="danger" onClick=${() => controller.current?.abort()}>${t('stop')}</button>`
              : html`<button type="submit" disabled=${!model}>${t('send')}</button>`}
            <button type="button" disabled=${busy} onClick=${() => setMessages([])}>${t('clear')}</button>
          </div>
        </form>
      </div>
    </div>
  </${Page}>`
}
