// What every page may ask: /api/status, the signed-in user (or null) and the UI's
// language and theme. Roles as new-api: 1 user, 10 admin, 100 root.
import { createContext } from 'preact'
import { useContext } from 'preact/hooks'

export const ROLE_ADMIN = 10
export const ROLE_ROOT = 100

export const SessionContext = createContext(null)
export const useSession = () => useContext(SessionContext)
