// Small helpers of the channels page: type names, statuses, the channel test's own answer
// (new-api's {success, message, time}: not the usual envelope with `data`).
import { ApiError, api, headers, query } from '../../lib/api.js'
import { t } from './strings.js'

export const ENABLED = 1
export const MANUALLY_DISABLED = 2
export const AUTO_DISABLED = 3

// the names new-api's console gives the types (its brands); a type not listed shows the
// name its plugin gives it
const BRANDS = {
  1: 'OpenAI', 3: 'Azure OpenAI', 4: 'Ollama', 14: 'Anthropic Claude', 17: 'Alibaba Qwen (DashScope)',
  20: 'OpenRouter', 24: 'Google Gemini', 25: 'Moonshot', 26: 'Zhipu GLM', 27: 'Perplexity', 31: '01.AI',
  33: 'AWS Bedrock', 34: 'Cohere', 35: 'MiniMax', 37: 'Dify', 38: 'Jina', 39: 'Cloudflare', 40: 'SiliconFlow',
  41: 'Vertex AI', 42: 'Mistral AI', 43: 'DeepSeek', 45: 'Volcengine Ark', 46: 'Baidu Qianfan V2',
  47: 'Xinference', 48: 'xAI', 56: 'Replicate', 57: 'Codex', 1001: 'Groq', 1002: 'Together AI', 1003: 'Fireworks AI'
}

export function typeName (type, types) {
  if (type === 8) return t('typeCustom')
  const known = (types || []).find(x => x.type === type)
  return BRANDS[type] || known?.name || t('typeUnknown', { type })
}

export const statusText = status =>
  status === ENABLED ? t('statusEnabled') : status === AUTO_DISABLED ? t('statusAuto') : t('statusManual')

export function statusBadge (status) {
  return status === ENABLED ? 'badge on' : 'badge off'
}

export const splitList = text => String(text || '').split(',').map(s => s.trim()).filter(Boolean)

/** The keys of a multi-key channel as the list shows them: {size, disabled}, or null. */
export function multiKey (channel) {
  const info = channel.channel_info
  if (!info || !info.is_multi_key) return null
  return { size: info.multi_key_size || 0, disabled: Object.keys(info.multi_key_status_list || {}).length }
}

export function secondsText (ms) {
  if (!ms) return '—'
  return t('seconds', { s: (ms / 1000).toFixed(2) })
}

/** GET /api/channel/test/{id}: {success, message, time} (seconds). */
export async function testChannel (id, params) {
  const res = await fetch(`/api/channel/test/${id}` + query(params), { headers: headers(), credentials: 'same-origin' })
  let body
  try {
    body = await res.json()
  } catch {
    throw new ApiError(`HTTP ${res.status}`, res.status)
  }
  if (res.status === 401) window.dispatchEvent(new CustomEvent('signed-out'))
  return { success: body?.success === true, message: body?.message || '', time: Number(body?.time || 0) }
}

/** Every enabled channel (the list, page by page). */
export async function enabledChannels () {
  const out = []
  for (let p = 1; p <= 1000; p++) {
    const data = await api('/api/channel/', { params: { p, page_size: 100, status: 'enabled' } })
    out.push(...data.items)
    if (data.items.length === 0 || out.length >= data.total) break
  }
  return out
}

/** Runs `work(item)` over `items`, `limit` at a time, calling `step()` after each. */
export async function eachLimited (items, limit, work, step, stopped = () => false) {
  let next = 0
  const worker = async () => {
    while (next < items.length && !stopped()) {
      const item = items[next++]
      await work(item)
      step()
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
}

/** A JSON object text (or ""), else throws with the field's name. */
export function checkJson (text, label) {
  const value = String(text || '').trim()
  if (!value) return ''
  let parsed
  try {
    parsed = JSON.parse(value)
  } catch {
    throw new Error(t('badJson', { field: label }))
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error(t('badJson', { field: label }))
  return value
}
