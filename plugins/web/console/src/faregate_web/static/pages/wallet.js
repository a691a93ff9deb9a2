// The wallet: balance, redeem a code (POST /api/user/topup), online top-up when a payment
// plugin is set up (wallet/online.js), the user's orders, and the invitation link with the
// rewards it earned (moved into the balance by POST /api/user/aff_transfer).
import { useState } from 'preact/hooks'
import { html } from '../lib/html.js'
import { api } from '../lib/api.js'
import { translator } from '../lib/i18n.js'
import { numberText, quotaText } from '../lib/format.js'
import { useSession } from '../lib/session.js'
import { t as common } from '../lib/strings.js'
import { CopyButton, ErrorText, Field, Page, toast, useAsync } from '../lib/ui.js'
import { OnlineTopUp, TopUpHistory } from './wallet/online.js'

export const strings = {
  en: {
    title: 'Wallet',
    balance: 'Balance',
    used: 'Used',
    requests: 'Requests',
    reward: 'Invitation rewards',
    redeemTitle: 'Redeem a code',
    code: 'Redemption code',
    redeem: 'Redeem',
    redeemed: 'Redeemed: {amount} added to your balance.',
    inviteTitle: 'Invite friends',
    inviteHint: 'Whoever signs up through your link counts as your invitee; the rewards go to your invitation balance.',
    link: 'Your invitation link',
    copyLink: 'Copy link',
    invited: 'Invited',
    earned: 'Earned in all',
    pending: 'To move',
    transfer: 'Move to balance',
    transferAmount: 'Quota to move',
    transferHint: 'At least {min} ({money}); at most what is waiting.',
    transferred: 'Moved {amount} into your balance.',
    noPayments: 'Online top-up is not set up on this site: use a redemption code.'
  },
  'zh-CN': {
    title: '钱包',
    balance: '当前余额',
    used: '历史消耗',
    requests: '请求次数',
    reward: '邀请奖励',
    redeemTitle: '兑换码充值',
    code: '兑换码',
    redeem: '兑换',
    redeemed: '兑换成功：余额增加 {amount}。',
    inviteTitle: '邀请好友',
    inviteHint: '通过你的链接注册的用户即为你的邀请用户，奖励计入邀请额度。',
    link: '邀请链接',
    copyLink: '复制链接',
    invited: '邀请人数',
    earned: '累计收益',
    pending: '待使用收益',
    transfer: '划转到余额',
    transferAmount: '划转额度',
    transferHint: '最少 {min}（{money}），最多为待使用收益。',
    transferred: '已将 {amount} 划转到余额。',
    noPayments: '本站未开启在线充值，请使用兑换码充值。'
  }
}
const t = translator(strings)

function Redeem ({ onDone }) {
  const { status } = useSession()
  const [error, setError] = useState(null)
  const [busy, setBusy] = useState(false)
  const submit = async e => {
    e.preventDefault()
    const form = e.currentTarget
    setBusy(true)
    setError(null)
    try {
      const added = await api('/api/user/topup', { method: 'POST', body: { key: form.key.value.trim() } })
      toast(t('redeemed', { amount: quotaText(added, status) }))
      form.reset()
      onDone()
    } catch (err) {
      setError(err)
    } finally {
      setBusy(false)
    }
  }
  return html`<section class="panel acct" aria-labelledby="redeem-h">
    <h2 id="redeem-h">${t('redeemTitle')}</h2>
    <form class="inline-form" onSubmit=${submit}>
      <${Field} label=${t('code')}><input name="key" required maxlength="32" autocomplete="off" spellcheck="false" /></${Field}>
      <button type="submit" disabled=${busy} aria-busy=${busy}>${t('redeem')}</button>
    </form>
    <${ErrorText} error=${error} />
  </section>`
}

function Invitation ({ me, onDone }) {
  const { status } = useSession()
  const code = useAsync(() => api('/api/user/aff'))
  const [error, setError] = useState(null)
  const [busy, setBusy] = useState(false)
  const unit = Math.round(status.quota_per_unit || 500000)
  const link = code.data ? `${window.location.origin}/register?aff=${encodeURIComponent(code.data)}` : ''
  const transfer = async e => {
    e.preventDefault()
    const form = e.currentTarget
    const quota = Number(form.quota.value)
    setBusy(true)
    setError(null)
    try {
      await api('/api/user/aff_transfer', { method: 'POST', body: { quota } })
      toast(t('transferred', { amount: quotaText(quota, status) }))
      onDone()
    } catch (err) {
      setError(err)
    } finally {
      setBusy(false)
    }
  }
  return html`<section class="panel acct" aria-labelledby="invite-h">
    <h2 id="invite-h">${t('inviteTitle')}</h2>
    <p class="muted">${t('inviteHint')}</p>
    <${ErrorText} error=${code.error} />
    ${link ? html`<div class="row invite-link">
      <${Field} label=${t('link')} wide><input readonly value=${link} name="invite-link" /></${Field}>
      <${CopyButton} text=${link} label=${t('copyLink')} />
    </div>` : null}
    <dl class="facts">
      <dt>${t('invited')}</dt><dd>${numberText(me.aff_count)}</dd>
      <dt>${t('earned')}</dt><dd>${quotaText(me.aff_history_quota, status)}</dd>
      <dt>${t('pending')}</dt><dd>${quotaText(me.aff_quota, status)}</dd>
    </dl>
    ${me.aff_quota >= unit ? html`<form class="inline-form" onSubmit=${transfer}>
      <${Field} label=${t('transferAmount')} hint=${t('transferHint', { min: numberText(unit), money: quotaText(unit, status) })}>
        <input type="number" name="quota" min=${unit} max=${me.aff_quota} step="1" value=${me.aff_quota} required />
      </${Field}>
      <button type="submit" disabled=${busy} aria-busy=${busy}>${t('transfer')}</button>
    </form>` : null}
    <${ErrorText} error=${error} />
  </section>`
}

export default function Wallet () {
  const { status } = useSession()
  const self = useAsync(() => api('/api/user/self'))
  const info = useAsync(() => api('/api/user/topup/info'))
  const me = self.data
  const online = info.data && (info.data.enable_online_topup || info.data.enable_stripe_topup || info.data.enable_creem_topup)
  return html`<${Page} title=${t('title')}>
    <${ErrorText} error=${self.error} />
    ${me ? html`<div class="cards" aria-live="polite">
      <div class="card"><div class="label">${t('balance')}</div><div class="value" data-testid="balance">${quotaText(me.quota, status)}</div></div>
      <div class="card"><div class="label">${t('used')}</div><div class="value">${quotaText(me.used_quota, status)}</div></div>
      <div class="card"><div class="label">${t('requests')}</div><div class="value">${numberText(me.request_count)}</div></div>
      <div class="card"><div class="label">${t('reward')}</div><div class="value">${quotaText(me.aff_quota, status)}</div></div>
    </div>` : self.loading ? html`<p class="loading">${common('loading')}</p>` : null}
    <${Redeem} onDone=${self.reload} />
    ${online ? html`<${OnlineTopUp} info=${info.data} />`
      : info.data ? html`<p class="muted">${t('noPayments')}</p>` : html`<${ErrorText} error=${info.error} />`}
    <${TopUpHistory} />
    ${me ? html`<${Invitation} me=${me} onDone=${self.reload} />` : null}
  </${Page}>`
}
