// The wallet's online top-up (when a payment plugin is set up: GET /api/user/topup/info)
// and the user's orders (GET /api/user/topup/self). The gateways' routes answer new-api's
// payment envelope ({message: "success" | "error", data}), not the management one.
import { useState } from 'preact/hooks'
import { html } from '../../lib/html.js'
import { ApiError, api, headers } from '../../lib/api.js'
import { translator } from '../../lib/i18n.js'
import { quotaText, timeText } from '../../lib/format.js'
import { useSession } from '../../lib/session.js'
import { t as common } from '../../lib/strings.js'
import { ErrorText, Field, Modal, Pager, Table, useAsync } from '../../lib/ui.js'

export const strings = {
  en: {
    online: 'Top up online',
    amount: 'Amount to buy (units)',
    amountHint: 'One unit is {unit} of quota. At least {min}.',
    presets: 'Amounts',
    discount: '{pct}% off',
    payWith: 'Pay with {name}',
    confirmTitle: 'Confirm the payment',
    youBuy: 'You buy',
    youPay: 'You pay',
    pricing: 'Working out the price…',
    payNow: 'Pay now',
    leaving: 'Taking you to the payment page…',
    products: 'Packages',
    buy: 'Buy {name}',
    history: 'Top-up history',
    order: 'Order',
    money: 'Paid',
    method: 'Method',
    status: 'Status',
    created: 'Created',
    completed: 'Completed',
    st_pending: 'Pending',
    st_success: 'Paid',
    st_failed: 'Failed',
    st_expired: 'Expired'
  },
  'zh-CN': {
    online: '在线充值',
    amount: '充值数量（单位）',
    amountHint: '每单位为 {unit} 额度。最少 {min}。',
    presets: '充值金额',
    discount: '{zhe} 折',
    payWith: '使用{name}支付',
    confirmTitle: '确认支付',
    youBuy: '充值额度',
    youPay: '实付金额',
    pricing: '正在计算价格…',
    payNow: '立即支付',
    leaving: '正在跳转到支付页面…',
    products: '充值套餐',
    buy: '购买 {name}',
    history: '充值记录',
    order: '订单号',
    money: '支付金额',
    method: '支付方式',
    status: '状态',
    created: '创建时间',
    completed: '完成时间',
    st_pending: '待支付',
    st_success: '已支付',
    st_failed: '失败',
    st_expired: '已过期'
  }
}
const t = translator(strings)
const PAGE_SIZE = 10

/** A payment route: {message: 'success', data, ...} or throws ApiError with the reason. */
async function payCall (path, body) {
  const res = await fetch(path, {
    method: 'POST', credentials: 'same-origin', body: JSON.stringify(body), headers: headers({ 'Content-Type': 'application/json' })
  })
  let payload
  try { payload = await res.json() } catch { throw new ApiError(`HTTP ${res.status}`, res.status) }
  if (res.ok && payload && payload.message === 'success') return payload
  const reason = payload && typeof payload.data === 'string' ? payload.data : payload?.message
  throw new ApiError(reason && reason !== 'error' ? reason : `HTTP ${res.status}`, res.status)
}

/** new-api's payment_setting.amount_discount: {"100": 0.95} or [{min_amount, discount}]. */
export function discountFor (raw, amount) {
  if (Array.isArray(raw)) {
    let best = -1
    let found = 1
    for (const item of raw) {
      if (item && item.min_amount <= amount && item.min_amount > best) { best = item.min_amount; found = item.discount }
    }
    return found
  }
  return (raw && raw[String(amount)]) || 1
}

const ROUTES = {
  stripe: { amount: '/api/user/stripe/amount', pay: '/api/user/stripe/pay' }
}
const routesOf = method => ROUTES[method.type] || { amount: '/api/user/amount', pay: '/api/user/pay', epay: true }

/** Leave for the gateway. Epay's answer is a signed form for {url}: its fields go as the query
 * (the console's policy lets forms post to this site only; Epay's submit.php takes GET too). */
function follow (answer) {
  const data = answer.data || {}
  if (answer.url) {
    const target = new URL(answer.url)
    for (const [k, v] of Object.entries(data)) target.searchParams.set(k, String(v))
    window.location.assign(target.toString())
  } else {
    window.location.assign(data.pay_link || data.checkout_url)
  }
}

function PayDialog ({ ask, onClose }) {
  const { status } = useSession()
  const routes = routesOf(ask.method)
  const price = useAsync(() => payCall(routes.amount, { amount: ask.amount, payment_method: ask.method.type }).then(a => a.data), [ask])
  const [error, setError] = useState(null)
  const [busy, setBusy] = useState(false)
  const pay = async () => {
    setBusy(true)
    setError(null)
    try {
      follow(await payCall(routes.pay, { amount: ask.amount, payment_method: ask.method.type }))
    } catch (e) {
      setError(e)
      setBusy(false)
    }
  }
  return html`<${Modal} open title=${t('confirmTitle')} onClose=${onClose}>
    <dl class="facts">
      <dt>${t('youBuy')}</dt><dd>${quotaText(ask.amount * (status.quota_per_unit || 500000), status)}</dd>
      <dt>${t('method')}</dt><dd>${ask.method.name}</dd>
      <dt>${t('youPay')}</dt><dd data-testid="price">${price.loading ? t('pricing') : price.data ? `${price.data}${routes.epay ? ' CNY' : ''}` : '—'}</dd>
    </dl>
    <${ErrorText} error=${price.error || error} />
    ${busy ? html`<p role="status">${t('leaving')}</p>` : null}
    <div class="row">
      <button type="button" class="primary" disabled=${busy || !price.data} onClick=${pay}>${t('payNow')}</button>
      <button type="button" onClick=${onClose}>${common('cancel')}</button>
    </div>
  </${Modal}>`
}

export function OnlineTopUp ({ info }) {
  const { status } = useSession()
  const min = Math.max(1, Number(info.min_topup || 1))
  const options = info.amount_options || []
  const [amount, setAmount] = useState(options.find(a => a >= min) || min)
  const [ask, setAsk] = useState(null)
  const [error, setError] = useState(null)
  const [busy, setBusy] = useState(false)
  const methods = info.pay_methods || []
  const unit = quotaText(status.quota_per_unit || 500000, status)
  const offLabel = d => t('discount', { pct: Math.round((1 - d) * 100), zhe: Math.round(d * 100) / 10 })

  const buy = async product => {
    setBusy(true)
    setError(null)
    try {
      follow(await payCall('/api/user/creem/pay', { product_id: product.productId }))
    } catch (e) {
      setError(e)
      setBusy(false)
    }
  }
  const start = method => {
    setError(null)
    if (!Number.isInteger(amount) || amount < min) return setError(new Error(t('amountHint', { unit, min })))
    setAsk({ amount, method })
  }

  return html`<section class="panel acct" aria-labelledby="online-h">
    <h2 id="online-h">${t('online')}</h2>
    ${methods.length ? html`
      ${options.length ? html`<div class="presets" role="group" aria-label=${t('presets')}>
        ${options.map(a => {
          const d = discountFor(info.discount, a)
          return html`<button type="button" aria-pressed=${a === amount} onClick=${() => setAmount(a)}>
            ${a}${d < 1 ? html` <small class="good">${offLabel(d)}</small>` : null}</button>`
        })}
      </div>` : null}
      <div class="form-grid">
        <${Field} label=${t('amount')} hint=${t('amountHint', { unit, min })}>
          <input type="number" name="amount" min=${min} step="1" inputmode="numeric" value=${amount}
            onInput=${e => setAmount(Number(e.currentTarget.value))} />
        </${Field}>
        <div class="row">
          ${methods.map(m => html`<button type="button" class="primary" onClick=${() => start(m)}>${t('payWith', { name: m.name })}</button>`)}
        </div>
      </div>` : null}
    ${info.enable_creem_topup && info.creem_products?.length ? html`
      <h3>${t('products')}</h3>
      <div class="cards">
        ${info.creem_products.map(p => html`<div class="card">
          <div class="label">${p.name}</div>
          <div class="value">${p.price} ${p.currency}</div>
          <div class="muted">${quotaText(p.quota, status)}</div>
          <button type="button" disabled=${busy} onClick=${() => buy(p)}>${t('buy', { name: p.name })}</button>
        </div>`)}
      </div>` : null}
    <${ErrorText} error=${error} />
    ${busy ? html`<p role="status">${t('leaving')}</p>` : null}
    ${ask ? html`<${PayDialog} ask=${ask} onClose=${() => setAsk(null)} />` : null}
  </section>`
}

export function TopUpHistory () {
  const [page, setPage] = useState(1)
  const { data, error } = useAsync(() => api('/api/user/topup/self', { params: { p: page, page_size: PAGE_SIZE } }), [page])
  if (!data || (data.total === 0 && page === 1)) return html`<${ErrorText} error=${error} />`
  const columns = [
    { label: t('order'), render: r => html`<code>${r.trade_no}</code>` },
    { label: t('amount'), key: 'amount' },
    { label: t('money'), render: r => `${r.money} ${r.currency}` },
    { label: t('method'), key: 'payment_method' },
    { label: t('status'), render: r => t(`st_${r.status}`) === `st_${r.status}` ? r.status : t(`st_${r.status}`) },
    { label: t('created'), render: r => timeText(r.create_time) },
    { label: t('completed'), render: r => timeText(r.complete_time) }
  ]
  return html`<section class="panel acct" aria-labelledby="history-h">
    <h2 id="history-h">${t('history')}</h2>
    <${Table} columns=${columns} rows=${data.items} caption=${t('history')} />
    <${Pager} page=${data.page} pageSize=${data.page_size} total=${data.total} onPage=${setPage} />
  </section>`
}
