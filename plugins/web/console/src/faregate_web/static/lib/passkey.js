// WebAuthn's JSON forms (the passkeys plugin speaks py_webauthn's) to and from the
// browser's ArrayBuffers.
const b64url = buf => btoa(String.fromCharCode(...new Uint8Array(buf))).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
const bytes = text => Uint8Array.from(atob(text.replace(/-/g, '+').replace(/_/g, '/').padEnd(Math.ceil(text.length / 4) * 4, '=')), c => c.charCodeAt(0))

const parse = options => (typeof options === 'string' ? JSON.parse(options) : options)

export async function getAssertion (options) {
  const o = parse(options)
  const publicKey = { ...o, challenge: bytes(o.challenge), allowCredentials: (o.allowCredentials || []).map(c => ({ ...c, id: bytes(c.id) })) }
  const cred = await navigator.credentials.get({ publicKey })
  return {
    id: cred.id,
    rawId: b64url(cred.rawId),
    type: cred.type,
    response: {
      clientDataJSON: b64url(cred.response.clientDataJSON),
      authenticatorData: b64url(cred.response.authenticatorData),
      signature: b64url(cred.response.signature),
      userHandle: cred.response.userHandle ? b64url(cred.response.userHandle) : null
    }
  }
}

export async function createCredential (options) {
  const o = parse(options)
  const publicKey = {
    ...o,
    challenge: bytes(o.challenge),
    user: { ...o.user, id: bytes(o.user.id) },
    excludeCredentials: (o.excludeCredentials || []).map(c => ({ ...c, id: bytes(c.id) }))
  }
  const cred = await navigator.credentials.create({ publicKey })
  return {
    id: cred.id,
    rawId: b64url(cred.rawId),
    type: cred.type,
    response: {
      clientDataJSON: b64url(cred.response.clientDataJSON),
      attestationObject: b64url(cred.response.attestationObject),
      transports: cred.response.getTransports ? cred.response.getTransports() : []
    }
  }
}
