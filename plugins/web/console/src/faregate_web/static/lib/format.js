// Quota as new-api shows it: money (USD, CNY or a custom currency) or raw tokens, from
// /api/status's quota_per_unit and display settings.
import { lang } from './i18n.js'

export function quotaText (quota, status) {
  const q = Number(quota || 0)
  if (!status || !status.display_in_currency || status.quota_display_type === 'TOKENS') return q.toLocaleString(lang())
  const usd = q / (status.quota_per_unit || 500000)
  let symbol = '$'
  let amount = usd
  if (status.quota_display_type === 'CNY') {
    symbol = '¥'
    amount = usd * (status.usd_exchange_rate || 7.3)
  } else if (status.quota_display_type === 'CUSTOM') {
    symbol = status.custom_currency_symbol || '¤'
    amount = usd * (status.custom_currency_exchange_rate || 1)
  }
  // cents for whole amounts; small ones keep up to six decimals without trailing zeros
  const digits = Math.abs(amount) >= 1 || amount === 0 ? 2 : 6
  return symbol + amount.toFixed(digits).replace(/(\.\d\d\d*?)0+$/, '$1')
}

export function timeText (seconds) {
  if (!seconds || seconds < 0) return '—'
  return new Date(seconds * 1000).toLocaleString(lang())
}

export function numberText (n) {
  return Number(n || 0).toLocaleString(lang())
}
