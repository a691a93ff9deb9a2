// Model output is untrusted. Raw HTML in it is shown as text (what the model wrote, never
// markup); the Markdown is rendered by marked, then DOMPurify keeps only text-formatting
// tags (no images, forms, frames, styles, event handlers or javascript: links). The page's
// Content-Security-Policy is the wall behind both.
import { Marked } from 'marked'
import DOMPurify from 'dompurify'

const escapeHtml = text => text.replace(/[&<>"']/g, c => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]))

const marked = new Marked({ async: false, gfm: true, breaks: true, renderer: { html: token => escapeHtml(token.text) } })

const ALLOWED_TAGS = ['a', 'b', 'blockquote', 'br', 'code', 'del', 'em', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'hr',
  'i', 'li', 'ol', 'p', 'pre', 's', 'strong', 'sub', 'sup', 'table', 'tbody', 'td', 'th', 'thead', 'tr', 'ul', 'span']

DOMPurify.addHook('afterSanitizeAttributes', node => {
  if (node.tagName === 'A') {
    const href = node.getAttribute('href') || ''
    if (!/^(https?:|mailto:|#)/i.test(href)) node.removeAttribute('href')
    node.setAttribute('target', '_blank')
    node.setAttribute('rel', 'noopener noreferrer nofollow')
  }
})

export function renderMarkdown (text) {
  const raw = marked.parse(String(text ?? ''))
  return DOMPurify.sanitize(raw, { ALLOWED_TAGS, ALLOWED_ATTR: ['href', 'title', 'target', 'rel', 'colspan', 'rowspan'] })
}
