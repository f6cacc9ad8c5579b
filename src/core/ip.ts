import { isIPv4 } from 'node:net'

/**
 * `::ffff:203.0.113.7` → `203.0.113.7`: what a dual-stack socket reports for an IPv4 client, so
 * that one client is one address for rate limits, trusted-proxy checks and Supabase Auth.
 * Any other address is returned as it is.
 */
export function unmapIPv4(address: string): string {
  if (address.length > 7 && address.slice(0, 7).toLowerCase() === '::ffff:' && isIPv4(address.slice(7)))
    return address.slice(7)
  return address
}
