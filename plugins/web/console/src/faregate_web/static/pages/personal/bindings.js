// Personal settings, linked accounts: the user's bindings (GET /api/user/oauth/bindings),
// each unlinked with DELETE (the server refuses to unlink the only way into an account),
// and a "Link" button for each outside sign-in the site turned on that the user has not
// linked: the OAuth flow (which binds while logged in), WeChat's code dialog, Telegram.
import { useState } from 'preact/hooks'
import { html } from '../../lib/html.js'
import { api } from '../../lib/api.js'
import { translator } from '../../lib/i18n.js'
import { timeText } from '../../lib/format.js'
import { useSession } from '../../lib/session.js'
import { t as common } from '../../lib/strings.js'
import { ActionButton, ErrorText, Table, toast, useAsync } from '../../lib/ui.js'
import { WeChatDialog, providerTitle, signInMethods } from '../signin/outside.js'

export const strings = {
  en: {
    bindings: 'Linked accounts',
    provider: 'Provider',
    accountId: 'Account id',
    linked: 'Linked',
    link: 'Link {provider}',
    linkedNow: 'Your {provider} account is linked.',
    unbind: 'Unlink',
    confirmUnbind: 'Unlink your {provider} account?',
    unbound: 'Unlinked.'
  },
  'zh-CN': {
    bindings: '账户绑定',
    provider: '平台',
    accountId: '账户 ID',
    linked: '绑定时间',
    link: '绑定 {provider}',
    linkedNow: '已绑定 {provider} 账户。',
    unbind: '解绑',
    confirmUnbind: '确定解绑 {provider} 账户？',
    unbound: '已解绑。'
  }
}
const t = translator(strings)

const HERE = '/console/personal'

export function Bindings () {
  const { status } = useSession()
  const { data, error, reload } = useAsync(() => api('/api/user/oauth/bindings'))
  const [wechat, setWechat] = useState(false)
  if (!data) return html`<${ErrorText} error=${error} />`
  const bound = new Set(data.map(b => b.provider))
  const linkable = signInMethods(status, { next: HERE, wechat: () => setWechat(true) }).filter(p => !bound.has(p.name))
  if (!data.length && !linkable.length) return null
  const unbind = async row => {
    await api(`/api/user/oauth/bindings/${encodeURIComponent(row.provider)}`, { method: 'DELETE' })
    toast(t('unbound'))
    reload()
  }
  const columns = [
    { label: t('provider'), render: r => providerTitle(r.provider) },
    { label: t('accountId'), key: 'provider_user_id' },
    { label: t('linked'), render: r => timeText(r.created_at) },
    {
      label: common('actions'),
      render: r => html`<${ActionButton} class="danger" action=${() => unbind(r)}
        confirm=${t('confirmUnbind', { provider: providerTitle(r.provider) })}>${t('unbind')}</${ActionButton}>`
    }
  ]
  return html`<section class="panel acct" aria-labelledby="bind-h">
    <h2 id="bind-h">${t('bindings')}</h2>
    ${data.length ? html`<${Table} columns=${columns} rows=${data} caption=${t('bindings')} rowKey=${r => r.provider} />` : null}
    ${linkable.length ? html`<p class="row">${linkable.map(p => html`<button type="button" key=${p.name}
        onClick=${p.start}>${t('link', { provider: providerTitle(p.name) })}</button>`)}</p>` : null}
    ${wechat ? html`<${WeChatDialog} bind onClose=${() => setWechat(false)}
        onDone=${() => { setWechat(false); toast(t('linkedNow', { provider: providerTitle('wechat') })); reload() }} />` : null}
  </section>`
}
