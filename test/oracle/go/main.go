// The oracle: what Supabase Auth's Go standard library reads from a raw request. One request per
// line on stdin, one answer per line on stdout (JSON), so that one process serves a whole run of
// generated requests. Standard library only; the decoding rules are Go's own:
//
//   - a body: encoding/json's Unmarshal into the route's struct (structs.go): exact key, else a
//     key equal under Unicode simple case folding; every occurrence of a repeated key decoded in
//     order; invalid UTF-8 and lone surrogates read as U+FFFD; a type mismatch is an error;
//   - the query: net/url's ParseQuery on the target's raw query, first value of each name;
//   - a form: net/http's ParseForm (the body's pairs, then the query's), first value of each name;
//   - Basic credentials: net/http's BasicAuth, and each half through url.QueryUnescape as RFC 6749
//     §2.3.1 encodes them.
package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"unicode/utf8"
)

type request struct {
	Struct  string      `json:"struct"`
	Method  string      `json:"method"`
	Target  string      `json:"target"`
	Headers [][2]string `json:"headers"`
	Body    string      `json:"body"` // base64
}

type basic struct {
	User          string `json:"user"`
	Pass          string `json:"pass"`
	UnescapedUser string `json:"unescaped_user"`
	UnescapedPass string `json:"unescaped_pass"`
	UnescapeError string `json:"unescape_error,omitempty"`
}

type answer struct {
	// The request line and headers Go's server could not read; nothing else is set then.
	RequestError string `json:"request_error,omitempty"`
	// The route's struct after decoding the body as JSON (every field, zero when absent), or the error.
	Fields      interface{} `json:"fields"`
	DecodeError string      `json:"decode_error,omitempty"`
	// No struct decodes this body (a grant type Supabase Auth does not know): nothing is read.
	NoStruct bool `json:"no_struct,omitempty"`
	// The CAPTCHA check's own reading of gotrue_meta_security.captcha_token, when it decodes.
	Captcha *string           `json:"captcha"`
	Query   map[string]string `json:"query"`
	// The Content-Type's media type as mime.ParseMediaType reads it ("" when it cannot).
	MediaType string `json:"media_type"`
	// ParseForm: the body's pairs (when the Content-Type is a form), then the query's, as FormValue reads them.
	Form  map[string]string `json:"form"`
	Basic *basic            `json:"basic"`
}

// The first value of each name. Names that are not UTF-8 are left out: JSON cannot tell them
// apart (each bad byte would be written as U+FFFD), and no field of a request is named so. A value
// that is not UTF-8 is written with U+FFFD for each bad byte.
func first(values url.Values) map[string]string {
	out := make(map[string]string, len(values))
	for k, vs := range values {
		if len(vs) > 0 && utf8.ValidString(k) {
			out[k] = vs[0]
		}
	}
	return out
}

func read(req request) answer {
	body, err := base64.StdEncoding.DecodeString(req.Body)
	if err != nil {
		return answer{RequestError: "body is not base64: " + err.Error()}
	}
	var raw bytes.Buffer
	fmt.Fprintf(&raw, "%s %s HTTP/1.1\r\nHost: oracle\r\n", req.Method, req.Target)
	for _, h := range req.Headers {
		fmt.Fprintf(&raw, "%s: %s\r\n", h[0], h[1])
	}
	fmt.Fprintf(&raw, "Content-Length: %s\r\n\r\n", strconv.Itoa(len(body)))
	raw.Write(body)
	r, err := http.ReadRequest(bufio.NewReader(&raw))
	if err != nil {
		return answer{RequestError: err.Error()}
	}
	out := answer{}
	q, _ := url.ParseQuery(r.URL.RawQuery)
	out.Query = first(q)
	if user, pass, ok := r.BasicAuth(); ok {
		b := &basic{User: user, Pass: pass}
		u, e1 := url.QueryUnescape(user)
		p, e2 := url.QueryUnescape(pass)
		if e1 != nil || e2 != nil {
			b.UnescapeError = fmt.Sprint(e1, e2)
		} else {
			b.UnescapedUser, b.UnescapedPass = u, p
		}
		out.Basic = b
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err == nil {
		out.MediaType = mt
	}
	data, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(data))
	// Errors are ignored as FormValue ignores them: the pairs read before and after a bad one stay.
	_ = r.ParseForm()
	out.Form = first(r.Form)
	name := req.Struct
	if name == "POST /token" {
		// Supabase Auth chooses the grant's struct by the query's grant_type, as Go reads it.
		name += " " + q.Get("grant_type")
	}
	if make, ok := structs[name]; ok {
		target := make()
		if err := json.Unmarshal(data, target); err != nil {
			out.DecodeError = err.Error()
		} else {
			out.Fields = target
		}
		var captcha captchaParams
		if json.Unmarshal(data, &captcha) == nil {
			out.Captcha = &captcha.Security.CaptchaToken
		}
	} else if req.Struct != "" {
		out.NoStruct = true
	}
	return out
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 0, 1<<20), 64<<20)
	w := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(w)
	for in.Scan() {
		var req request
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			enc.Encode(answer{RequestError: "oracle input: " + err.Error()})
		} else {
			enc.Encode(read(req))
		}
		w.Flush()
	}
}
