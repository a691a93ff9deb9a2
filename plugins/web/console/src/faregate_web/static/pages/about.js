// The operator's About text (Markdown, sanitized).
import { html } from '../lib/html.js'
import { api } from '../lib/api.js'
import { translator } from '../lib/i18n.js'
import { renderMarkdown } from '../lib/markdown.js'
import { ErrorText, Page, useAsync } from '../lib/ui.js'

export const strings = {
  en: { title: 'About', none: 'The administrator has not written an About page yet.' },
  'zh-CN': { title: '关于', none: '管理员尚未设置关于页面。' }
}
const t = translator(strings)

export default function About () {
  const about = useAsync(() => api('/api/about'), [])
  const text = typeof about.data === 'string' ? about.data.trim() : ''
  return html`<${Page} title=${t('title')}>
    <${ErrorText} error=${about.error} />
    ${text ? html`<div class="panel markdown" dangerouslySetInnerHTML=${{ __html: renderMarkdown(text) }} />`
      : about.loading ? null : html`<p class="muted">${t('none')}</p>`}
  </${Page}>`
}
