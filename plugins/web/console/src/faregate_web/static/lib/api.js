// The management API's envelope ({success, message, data}) and new-api's session
// contract: the cookie plus the signed-in user's id in `New-Api-User` on every call.

export class ApiError extends Error {
  constructor (message, status) {
    super(message)
    this.status = status
  }
}

const USER_KEY = 'uid'
export const userId = () => localStorage.getItem(USER_KEY) || ''
export function rememberUser (id) {
  if (id) localStorage.setItem(USER_KEY, String(id))
  else localStorage.removeItem(USER_KEY)
}

export function headers (extra = {}) {
  const h = { Accept: 'application/json', ...extra }
  const id = userId()
  if (id) h['New-Api-User'] = id
  return h
}

export function query (params) {
  const q = new URLSearchParams()
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== undefined && v !== null && v !== '') q.set(k, String(v))
  }
  const s = q.toString()
  return s ? `?${s}` : ''
}

/** Sends the browser to a route of this site (a top-level GET: a sign-in that leaves for
 *  the provider and comes back). A path, so the documented-routes test reads it as a call. */
export function navigate (path, params) {
  window.location.assign(path + query(params))
}

/** `data` of a successful answer; throws ApiError with the server's message otherwise. */
export async function api (path, { method = 'GET', body, params, signal } = {}) {
  const init = { method, headers: headers(), credentials: 'same-origin', signal }
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json'
    init.body = JSON.stringify(body)
  }
  const res = await fetch(path + query(params), init)
  let payload
  try {
    payload = await res.json()
  } catch {
    throw new ApiError(`HTTP ${res.status}`, res.status)
  }
  if (res.status === 401 && !path.startsWith('/api/user/login')) window.dispatchEvent(new CustomEvent('signed-out'))
  if (!payload || payload.success === false || !res.ok) {
    throw new ApiError(payload?.message || payload?.error?.message || `HTTP ${res.status}`, res.status)
  }
  return payload.data
}

/** /api/pricing's whole answer: new-api puts group_ratio, usable_group and auto_groups
 *  beside data (each model's enable_groups: the caller's groups serving it). */
export async function loadPricing () {
  const res = await fetch('/api/pricing', { headers: headers(), credentials: 'same-origin' })
  let body
  try { body = await res.json() } catch { throw new ApiError(`HTTP ${res.status}`, res.status) }
  if (!res.ok || !body || body.success === false) throw new ApiError(body?.message || `HTTP ${res.status}`, res.status)
  return body
}

/** A file from an authenticated route (a link cannot send New-Api-User), read piece by
 *  piece as it streams in: `onPiece(bytesSoFar, text)` after each, for a progress display. */
export async function download (path, params, filename, onPiece) {
  const res = await fetch(path + query(params), { headers: headers({ Accept: '*/*' }), credentials: 'same-origin' })
  if (!res.ok) {
    let message = `HTTP ${res.status}`
    try { message = (await res.json()).message || message } catch {}
    throw new ApiError(message, res.status)
  }
  const reader = res.body.getReader()
  const decoder = new TextDecoder()
  const pieces = []
  let received = 0
  for (;;) {
    const { value, done } = await reader.read()
    if (done) break
    pieces.push(value)
    received += value.byteLength
    if (onPiece) onPiece(received, decoder.decode(value, { stream: true }))
  }
  saveBlob(new Blob(pieces, { type: res.headers.get('Content-Type') || '' }), filename)
  return received
}

/** Hands the browser a file to save (a link clicked on an object URL). */
export function saveBlob (blob, filename) {
  const url = URL.createObjectURL(blob)
  const a = document.createElement('a')
  a.href = url
  a.download = filename
  document.body.append(a)
  a.click()
  a.remove()
  setTimeout(() => URL.revokeObjectURL(url), 10000)
}
