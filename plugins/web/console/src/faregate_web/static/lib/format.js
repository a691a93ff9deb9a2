// Quota as new-api shows it: money (USD, CNY or a custom currency) or raw tokens, from
// /api/status's quota_per_unit and display settings.
import { lang } from './i18n.js'

function currency (usd, status) {
  if (status.quota_display_type === 'CNY') return ['¥', usd * (status.usd_exchange_rate || 7.3)]
  if (status.quota_display_type === 'CUSTOM') {
    return [status.custom_currency_symbol || '¤', usd * (status.custom_currency_exchange_rate || 1)]
  }
  return ['$', usd]
}

/** US dollars in the site's display currency: at least cents, up to `digits` decimals
 *  (default: cents for whole amounts, six for small ones), no trailing zeros. */
export function moneyText (usd, status, digits) {
  const [symbol, amount] = currency(usd, status || {})
  const most = digits ?? (Math.abs(amount) >= 1 || amount === 0 ? 2 : 6)
  let text = amount.toFixed(most).replace(/0+$/, '').replace(/\.$/, '')
  if ((text.split('.')[1] || '').length < 2) text = amount.toFixed(2)
  return symbol + text
}

export function quotaText (quota, status) {
  const q = Number(quota || 0)
  if (!status || !status.display_in_currency || status.quota_display_type === 'TOKENS') return q.toLocaleString(lang())
  return moneyText(q / (status.quota_per_unit || 500000), status)
}

export function timeText (seconds) {
  if (!seconds || seconds < 0) return '—'
  return new Date(seconds * 1000).toLocaleString(lang())
}

export function numberText (n) {
  return Number(n || 0).toLocaleString(lang())
}
