import { Type, type TSchema } from 'typebox'
import { str } from '../types/common.ts'
import type { ResponseDoc } from './entry.ts'

// Error codes Supabase Auth uses on many routes.
export const RATE = 'over_request_rate_limit'
export const EMAIL_RATE = 'over_email_send_rate_limit'
export const SMS_RATE = 'over_sms_send_rate_limit'

export const redirectTo = str(
  'Where to send the user afterwards (must pass the backend allow list)',
  'http://localhost:3000/welcome',
)
export const redirectQuery = Type.Object({ redirect_to: Type.Optional(redirectTo) })
const location = {
  Location: { description: 'Redirect target', required: true, schema: { type: 'string', format: 'uri' } },
}
export const ok = (description: string, schema?: TSchema): Record<number, ResponseDoc> => ({
  200: schema ? { description, schema } : { description },
})
export const noContent = (description: string): Record<number, ResponseDoc> => ({ 204: { description } })
export const redirect = (description: string): ResponseDoc => ({ description, headers: location })
