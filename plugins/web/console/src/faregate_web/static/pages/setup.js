// First run: the root account (and new-api's self-use / demo switches).
import { useState } from 'preact/hooks'
import { useLocation } from 'preact-iso/router'
import { html } from '../lib/html.js'
import { api } from '../lib/api.js'
import { translator } from '../lib/i18n.js'
import { useSession } from '../lib/session.js'
import { ErrorText, Field, Page, toast } from '../lib/ui.js'

export const strings = {
  en: {
    title: 'Set up Faregate',
    intro: 'Create the root account. It manages channels, users and every setting.',
    done: 'This gateway is already set up.',
    username: 'Root username',
    password: 'Password',
    password2: 'Repeat the password',
    selfUse: 'Self-use mode (no prices needed for models)',
    demo: 'Demo site',
    submit: 'Create the root account',
    mismatch: 'The two passwords differ.',
    created: 'Set up: log in as root.'
  },
  'zh-CN': {
    title: '初始化 Faregate',
    intro: '创建 root 账户，它管理渠道、用户和所有设置。',
    done: '此网关已初始化。',
    username: 'Root 用户名',
    password: '密码',
    password2: '确认密码',
    selfUse: '自用模式（模型无需设置价格）',
    demo: '演示站点',
    submit: '创建 root 账户',
    mismatch: '两次输入的密码不一致。',
    created: '初始化完成，请以 root 登录。'
  }
}
const t = translator(strings)

export default function Setup () {
  const { status, refresh } = useSession()
  const { route } = useLocation()
  const [error, setError] = useState(null)
  const submit = async e => {
    e.preventDefault()
    const f = e.currentTarget
    if (f.password.value !== f.password2.value) return setError(new Error(t('mismatch')))
    try {
      await api('/api/setup', {
        method: 'POST',
        body: { username: f.username.value, password: f.password.value, confirmPassword: f.password2.value,
          SelfUseModeEnabled: f.self_use.checked, DemoSiteEnabled: f.demo.checked }
      })
      toast(t('created'))
      await refresh()
      route('/login')
    } catch (err) { setError(err) }
  }
  if (status.setup) return html`<${Page} title=${t('title')}><p>${t('done')}</p></${Page}>`
  return html`<${Page} title=${t('title')}>
    <div class="panel narrow">
      <p>${t('intro')}</p>
      <form onSubmit=${submit} class="form-grid">
        <${Field} label=${t('username')} wide><input name="username" value="root" required maxlength="20" autocomplete="username" /></${Field}>
        <${Field} label=${t('password')} wide><input name="password" type="password" required minlength="8" maxlength="64" autocomplete="new-password" /></${Field}>
        <${Field} label=${t('password2')} wide><input name="password2" type="password" required maxlength="64" autocomplete="new-password" /></${Field}>
        <label class="check field wide"><input type="checkbox" name="self_use" /> ${t('selfUse')}</label>
        <label class="check field wide"><input type="checkbox" name="demo" /> ${t('demo')}</label>
        <button type="submit">${t('submit')}</button>
      </form>
      <${ErrorText} error=${error} />
    </div>
  </${Page}>`
}
