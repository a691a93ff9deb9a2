// The log list: one row per log, a button per row that opens the row's details below it
// (the content, the request id, and the `other` JSON as indented text, never as HTML).
import { useState } from 'preact/hooks'
import { html } from '../../lib/html.js'
import { t as common } from '../../lib/strings.js'

/** `other` as readable text: indented JSON when it parses, else as stored. */
export function otherText (other) {
  if (!other) return ''
  try {
    return JSON.stringify(JSON.parse(other), null, 2)
  } catch {
    return String(other)
  }
}

export function LogTable ({ rows, columns, caption, detail, t }) {
  const [open, setOpen] = useState(() => new Set())
  if (!rows || rows.length === 0) return html`<p class="empty">${common('empty')}</p>`
  const toggle = id => setOpen(prev => {
    const next = new Set(prev)
    if (next.has(id)) next.delete(id)
    else next.add(id)
    return next
  })
  const span = columns.length + 1
  return html`<div class="table-wrap" role="region" aria-label=${caption} tabindex="0">
    <table class="log-table">
      <caption class="visually-hidden">${caption}</caption>
      <thead><tr>
        <th scope="col"><span class="visually-hidden">${t('details')}</span></th>
        ${columns.map(c => html`<th scope="col">${c.label}</th>`)}
      </tr></thead>
      <tbody>
        ${rows.map(row => {
          const shown = open.has(row.id)
          const id = `log-detail-${row.id}`
          return html`
            <tr key=${row.id} class=${shown ? 'log-row open' : 'log-row'}>
              <td><button type="button" class="log-toggle" aria-expanded=${shown} aria-controls=${shown ? id : undefined}
                aria-label=${t('detailsOf', { id: row.id })} onClick=${() => toggle(row.id)}>${shown ? '▾' : '▸'}</button></td>
              ${columns.map(c => html`<td data-label=${c.label}>${c.render ? c.render(row) : String(row[c.key] ?? '')}</td>`)}
            </tr>
            ${shown ? html`<tr key=${`${row.id}-detail`} class="log-detail" id=${id}>
              <td colspan=${span}>${detail(row)}</td>
            </tr>` : null}`
        })}
      </tbody>
    </table>
  </div>`
}
