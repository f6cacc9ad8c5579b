/**
 * A setting that cannot be used, named as the user gave it: the environment variable
 * (`AUTHGATE_BACKEND_URL`) or the option (`backendUrl`, `protect.issuer`).
 */
export class AuthgateConfigError extends Error {
  readonly option: string
  constructor(option: string, message: string) {
    super(`${option}: ${message}`)
    this.name = 'AuthgateConfigError'
    this.option = option
  }
}
