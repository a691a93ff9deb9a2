// The console's building blocks: page frame, form field, table, pager, dialog, toasts,
// copy button, async loading. Native elements first (label, button, dialog, progress):
// they bring keyboard use and screen-reader names for free.
import { useCallback, useEffect, useRef, useState } from 'preact/hooks'
import { html } from './html.js'
import { t } from './strings.js'

// the first page a visit opens keeps the browser's focus (Tab reaches the skip link
// first); after that, moving to a page moves focus to its heading, as a page load would
let firstPage = true

export function Page ({ title, actions, children }) {
  const heading = useRef(null)
  useEffect(() => {
    document.title = `${title} · Faregate`
    if (firstPage) firstPage = false
    else heading.current?.focus({ preventScroll: true })
  }, [title])
  return html`<section class="page">
    <header class="page-head">
      <h1 tabindex="-1" ref=${heading}>${title}</h1>
      ${actions ? html`<div class="page-actions">${actions}</div>` : null}
    </header>
    ${children}
  </section>`
}

export function Field ({ label, hint, children, wide }) {
  // the hint sits outside the <label>, so the input's accessible name is the label alone
  return html`<div class=${wide ? 'field wide' : 'field'}>
    <label class="field-box"><span class="field-label">${label}</span>${children}</label>
    ${hint ? html`<small class="hint">${hint}</small>` : null}
  </div>`
}

export function ErrorText ({ error }) {
  if (!error) return null
  return html`<p class="error" role="alert">${t('error', { message: error.message || String(error) })}</p>`
}

/** Runs `load` on mount and when `deps` change: {data, error, loading, reload}. */
export function useAsync (load, deps = []) {
  const [state, setState] = useState({ data: undefined, error: null, loading: true })
  const run = useCallback(() => {
    let live = true
    setState(s => ({ ...s, loading: true }))
    Promise.resolve().then(load).then(
      data => live && setState({ data, error: null, loading: false }),
      error => live && setState({ data: undefined, error, loading: false }))
    return () => { live = false }
  }, deps)
  useEffect(run, [run])
  return { ...state, reload: run }
}

export function Table ({ columns, rows, caption, rowKey = r => r.id }) {
  if (!rows || rows.length === 0) return html`<p class="empty">${t('empty')}</p>`
  return html`<div class="table-wrap" role="region" aria-label=${caption || ''} tabindex="0">
    <table>
      ${caption ? html`<caption class="visually-hidden">${caption}</caption>` : null}
      <thead><tr>${columns.map(c => html`<th scope="col">${c.label}</th>`)}</tr></thead>
      <tbody>
        ${rows.map(row => html`<tr key=${rowKey(row)}>
          ${columns.map(c => html`<td data-label=${c.label}>${c.render ? c.render(row) : String(row[c.key] ?? '')}</td>`)}
        </tr>`)}
      </tbody>
    </table>
  </div>`
}

export function Pager ({ page, pageSize, total, onPage }) {
  const pages = Math.max(1, Math.ceil((total || 0) / pageSize))
  return html`<nav class="pager" aria-label=${t('pagination')}>
    <button type="button" disabled=${page <= 1} onClick=${() => onPage(page - 1)}>${t('previous')}</button>
    <span>${t('pageOf', { page, pages, total: total || 0 })}</span>
    <button type="button" disabled=${page >= pages} onClick=${() => onPage(page + 1)}>${t('next')}</button>
  </nav>`
}

/** A modal <dialog>: focus moves in, Escape closes, focus returns. */
export function Modal ({ open, title, onClose, children, wide }) {
  const ref = useRef(null)
  useEffect(() => {
    const dialog = ref.current
    if (!dialog) return
    if (open && !dialog.open) dialog.showModal()
    if (!open && dialog.open) dialog.close()
  }, [open])
  return html`<dialog ref=${ref} class=${wide ? 'wide' : ''} onClose=${onClose} aria-label=${title}>
    ${open ? html`<header class="dialog-head"><h2>${title}</h2>
      <button type="button" class="icon" aria-label=${t('close')} onClick=${onClose}>✕</button></header>
      <div class="dialog-body">${children}</div>` : null}
  </dialog>`
}

const listeners = new Set()
export function toast (message, kind = 'info') {
  for (const listener of listeners) listener({ message, kind, id: Math.random() })
}

export function Toasts () {
  const [items, setItems] = useState([])
  useEffect(() => {
    const add = item => {
      setItems(list => [...list, item])
      setTimeout(() => setItems(list => list.filter(i => i !== item)), 5000)
    }
    listeners.add(add)
    return () => listeners.delete(add)
  }, [])
  return html`<div class="toasts" role="status" aria-live="polite">
    ${items.map(i => html`<p key=${i.id} class=${`toast ${i.kind}`}>${i.message}</p>`)}
  </div>`
}

export async function copyText (text) {
  try {
    await navigator.clipboard.writeText(text)
  } catch { // not a secure context (plain http on another host): the old way
    const area = document.createElement('textarea')
    area.value = text
    area.setAttribute('readonly', '')
    document.body.append(area)
    area.select()
    document.execCommand('copy')
    area.remove()
  }
  toast(t('copied'))
}

export function CopyButton ({ text, label }) {
  return html`<button type="button" onClick=${() => copyText(typeof text === 'function' ? text() : text)}>${label || t('copy')}</button>`
}

/** A button that runs an async action, shows it is busy and reports a failure. */
export function ActionButton ({ action, children, confirm: question, class: cls, label }) {
  const [busy, setBusy] = useState(false)
  const click = async () => {
    if (question && !window.confirm(question)) return
    setBusy(true)
    try {
      await action()
    } catch (e) {
      toast(t('error', { message: e.message }), 'bad')
    } finally {
      setBusy(false)
    }
  }
  return html`<button type="button" class=${cls} aria-label=${label} disabled=${busy} aria-busy=${busy} onClick=${click}>${children}</button>`
}

/** Form values as an object, numbers where the input is a number, checkboxes as booleans. */
export function formValues (form) {
  const out = {}
  for (const el of form.elements) {
    if (!el.name || el.disabled) continue
    if (el.type === 'checkbox') out[el.name] = el.checked
    else if (el.type === 'number') out[el.name] = el.value === '' ? undefined : Number(el.value)
    else out[el.name] = el.value
  }
  return out
}
