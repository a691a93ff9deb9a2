// The home page: the operator's HomePageContent (Markdown, sanitized) or a short welcome.
import { html } from '../lib/html.js'
import { api } from '../lib/api.js'
import { translator } from '../lib/i18n.js'
import { renderMarkdown } from '../lib/markdown.js'
import { useSession } from '../lib/session.js'
import { Page, useAsync } from '../lib/ui.js'

export const strings = {
  en: {
    title: 'Welcome',
    lead: 'One gateway for many model providers: OpenAI, Anthropic and Gemini formats, keys with quotas, logs and failover.',
    start: 'Open the console',
    login: 'Log in',
    baseUrl: 'API base URL'
  },
  'zh-CN': {
    title: '欢迎',
    lead: '一个网关接入多家模型服务：OpenAI、Anthropic、Gemini 格式，带额度的令牌、日志与故障切换。',
    start: '进入控制台',
    login: '登录',
    baseUrl: 'API 地址'
  }
}
const t = translator(strings)

export default function Home () {
  const { user, status } = useSession()
  const content = useAsync(() => api('/api/home_page_content'), [])
  const custom = typeof content.data === 'string' && content.data.trim()
  return html`<${Page} title=${status.system_name || t('title')}>
    ${custom ? html`<div class="panel markdown" dangerouslySetInnerHTML=${{ __html: renderMarkdown(content.data) }} />`
      : html`<div class="panel"><p>${t('lead')}</p>
        <p>${t('baseUrl')}: <code>${(status.server_address || location.origin) + '/v1'}</code></p>
        <p><a href=${user ? '/console' : '/login'}>${user ? t('start') : t('login')}</a></p></div>`}
  </${Page}>`
}
