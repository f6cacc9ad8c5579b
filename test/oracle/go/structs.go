package main

import "encoding/json"

// The request bodies Supabase Auth decodes, as Go types: each route's fields with their JSON names
// and the Go type that decides how a value is read (a string field refuses a number; `null` leaves
// a string as it was but makes a pointer nil; a map takes any keys). Written from the request
// schemas of authgate's route table (src/auth/routes, src/auth/types), which follow the backend's
// request structs. Only what decoding needs is here: no validation, no handler logic.

// The CAPTCHA check reads `gotrue_meta_security` on its own; the route structs keep it raw.
type captchaParams struct {
	Security struct {
		CaptchaToken string `json:"captcha_token"`
	} `json:"gotrue_meta_security"`
}

type signupParams struct {
	Password            string                 `json:"password"`
	Email               string                 `json:"email"`
	Phone               string                 `json:"phone"`
	Data                map[string]interface{} `json:"data"`
	Channel             string                 `json:"channel"`
	CodeChallenge       string                 `json:"code_challenge"`
	CodeChallengeMethod string                 `json:"code_challenge_method"`
	GotrueMetaSecurity  json.RawMessage        `json:"gotrue_meta_security"`
}

// POST /token: one struct per grant type (the query's grant_type chooses it).
type passwordGrantParams struct {
	Email              string          `json:"email"`
	Phone              string          `json:"phone"`
	Password           string          `json:"password"`
	GotrueMetaSecurity json.RawMessage `json:"gotrue_meta_security"`
}

type refreshTokenGrantParams struct {
	RefreshToken string `json:"refresh_token"`
}

type pkceGrantParams struct {
	AuthCode     string `json:"auth_code"`
	CodeVerifier string `json:"code_verifier"`
}

type idTokenGrantParams struct {
	IDToken            string          `json:"id_token"`
	AccessToken        string          `json:"access_token"`
	Nonce              string          `json:"nonce"`
	Provider           string          `json:"provider"`
	ClientID           string          `json:"client_id"`
	Issuer             string          `json:"issuer"`
	LinkIdentity       bool            `json:"link_identity"`
	GotrueMetaSecurity json.RawMessage `json:"gotrue_meta_security"`
}

type web3GrantParams struct {
	Message   string `json:"message"`
	Signature string `json:"signature"`
	Chain     string `json:"chain"`
}

type otpParams struct {
	Email               string                 `json:"email"`
	Phone               string                 `json:"phone"`
	CreateUser          bool                   `json:"create_user"`
	Data                map[string]interface{} `json:"data"`
	Channel             string                 `json:"channel"`
	CodeChallenge       string                 `json:"code_challenge"`
	CodeChallengeMethod string                 `json:"code_challenge_method"`
	GotrueMetaSecurity  json.RawMessage        `json:"gotrue_meta_security"`
}

type magicLinkParams struct {
	Email               string                 `json:"email"`
	Data                map[string]interface{} `json:"data"`
	CodeChallenge       string                 `json:"code_challenge"`
	CodeChallengeMethod string                 `json:"code_challenge_method"`
	GotrueMetaSecurity  json.RawMessage        `json:"gotrue_meta_security"`
}

type verifyParams struct {
	Type               string          `json:"type"`
	Token              string          `json:"token"`
	TokenHash          string          `json:"token_hash"`
	Email              string          `json:"email"`
	Phone              string          `json:"phone"`
	RedirectTo         string          `json:"redirect_to"`
	GotrueMetaSecurity json.RawMessage `json:"gotrue_meta_security"`
}

type recoverParams struct {
	Email               string          `json:"email"`
	CodeChallenge       string          `json:"code_challenge"`
	CodeChallengeMethod string          `json:"code_challenge_method"`
	GotrueMetaSecurity  json.RawMessage `json:"gotrue_meta_security"`
}

type resendParams struct {
	Type                string          `json:"type"`
	Email               string          `json:"email"`
	Phone               string          `json:"phone"`
	CodeChallenge       string          `json:"code_challenge"`
	CodeChallengeMethod string          `json:"code_challenge_method"`
	GotrueMetaSecurity  json.RawMessage `json:"gotrue_meta_security"`
}

// PUT /user: the passwords are pointers, so `null` makes them nil (no change) rather than keeping
// an earlier value.
type userUpdateParams struct {
	Email               string                 `json:"email"`
	Phone               string                 `json:"phone"`
	Channel             string                 `json:"channel"`
	Password            *string                `json:"password"`
	CurrentPassword     *string                `json:"current_password"`
	Nonce               string                 `json:"nonce"`
	Data                map[string]interface{} `json:"data"`
	CodeChallenge       string                 `json:"code_challenge"`
	CodeChallengeMethod string                 `json:"code_challenge_method"`
}

type emptyParams struct{}

type oauthTokenParams struct {
	GrantType    string `json:"grant_type"`
	Code         string `json:"code"`
	RedirectURI  string `json:"redirect_uri"`
	CodeVerifier string `json:"code_verifier"`
	RefreshToken string `json:"refresh_token"`
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
	Resource     string `json:"resource"`
}

type oauthRegisterParams struct {
	RedirectURIs            []string `json:"redirect_uris"`
	ClientType              string   `json:"client_type"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
	ClientName              string   `json:"client_name"`
	ClientURI               string   `json:"client_uri"`
	LogoURI                 string   `json:"logo_uri"`
}

type passkeyVerifyParams struct {
	ChallengeID string          `json:"challenge_id"`
	Credential  json.RawMessage `json:"credential"`
}

type passkeyOptionsParams struct {
	GotrueMetaSecurity json.RawMessage `json:"gotrue_meta_security"`
}

type passkeyUpdateParams struct {
	FriendlyName string `json:"friendly_name"`
}

type enrollFactorParams struct {
	FactorType   string `json:"factor_type"`
	FriendlyName string `json:"friendly_name"`
	Issuer       string `json:"issuer"`
	Phone        string `json:"phone"`
}

type challengeFactorParams struct {
	Channel  string                 `json:"channel"`
	WebAuthn map[string]interface{} `json:"webauthn"`
}

type verifyFactorParams struct {
	ChallengeID string                 `json:"challenge_id"`
	Code        string                 `json:"code"`
	WebAuthn    map[string]interface{} `json:"webauthn"`
}

type ssoParams struct {
	ProviderID          string          `json:"provider_id"`
	Domain              string          `json:"domain"`
	RedirectTo          string          `json:"redirect_to"`
	SkipHTTPRedirect    bool            `json:"skip_http_redirect"`
	CodeChallenge       string          `json:"code_challenge"`
	CodeChallengeMethod string          `json:"code_challenge_method"`
	GotrueMetaSecurity  json.RawMessage `json:"gotrue_meta_security"`
}

type consentParams struct {
	Action string `json:"action"`
}

// A new value of each route's struct, by the route's name in authgate's table (`POST /token` by
// its grant type: `POST /token password`).
var structs = map[string]func() interface{}{
	"POST /signup":                          func() interface{} { return &signupParams{} },
	"POST /token password":                  func() interface{} { return &passwordGrantParams{} },
	"POST /token refresh_token":             func() interface{} { return &refreshTokenGrantParams{} },
	"POST /token pkce":                      func() interface{} { return &pkceGrantParams{} },
	"POST /token id_token":                  func() interface{} { return &idTokenGrantParams{} },
	"POST /token web3":                      func() interface{} { return &web3GrantParams{} },
	"POST /otp":                             func() interface{} { return &otpParams{} },
	"POST /magiclink":                       func() interface{} { return &magicLinkParams{} },
	"POST /verify":                          func() interface{} { return &verifyParams{} },
	"POST /recover":                         func() interface{} { return &recoverParams{} },
	"POST /resend":                          func() interface{} { return &resendParams{} },
	"PUT /user":                             func() interface{} { return &userUpdateParams{} },
	"POST /reauthenticate":                  func() interface{} { return &emptyParams{} },
	"POST /oauth/token":                     func() interface{} { return &oauthTokenParams{} },
	"POST /oauth/clients/register":          func() interface{} { return &oauthRegisterParams{} },
	"POST /passkeys/registration/options":   func() interface{} { return &emptyParams{} },
	"POST /passkeys/registration/verify":    func() interface{} { return &passkeyVerifyParams{} },
	"POST /passkeys/authentication/options": func() interface{} { return &passkeyOptionsParams{} },
	"POST /passkeys/authentication/verify":  func() interface{} { return &passkeyVerifyParams{} },
	"PATCH /passkeys/{id}":                  func() interface{} { return &passkeyUpdateParams{} },
	"POST /factors":                         func() interface{} { return &enrollFactorParams{} },
	"POST /factors/{factor_id}/challenge":   func() interface{} { return &challengeFactorParams{} },
	"POST /factors/{factor_id}/verify":      func() interface{} { return &verifyFactorParams{} },
	"POST /sso":                             func() interface{} { return &ssoParams{} },
	"POST /oauth/authorizations/{authorization_id}/consent": func() interface{} { return &consentParams{} },
}
