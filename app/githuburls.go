package app

import (
	"fmt"
	"net/url"
	"strings"
)

// applyGitHubURLDefaults fills github.web_url and github.v4_api_url, when
// not given, from github.v3_api_url (itself github.com's by default): the
// three must name the same GitHub, or Forge would clone from, link to and
// mutate on github.com what it reads on an Enterprise server. What cannot
// be derived stays empty, for validateGitHubURLs to explain.
func (c *Config) applyGitHubURLDefaults() {
	if c.Github.V3APIURL == "" {
		c.Github.V3APIURL = DefaultV3APIURL
	}
	web, v4 := DeriveGitHubURLs(c.Github.V3APIURL)
	if c.Github.WebURL == "" {
		c.Github.WebURL = web
	}
	if c.Github.V4APIURL == "" {
		c.Github.V4APIURL = v4
	}
}

// DeriveGitHubURLs is the web and GraphQL URLs of the GitHub whose REST API
// is at v3, in GitHub's two layouts:
//
//   - GitHub Enterprise Server: REST at https://HOST/api/v3/, GraphQL at
//     https://HOST/api/graphql, the web at https://HOST/;
//   - github.com and GitHub Enterprise Cloud with data residency: REST at
//     the root of an API host (https://api.github.com/,
//     https://api.SUBDOMAIN.ghe.com/), GraphQL at /graphql on the same
//     host, the web on the host without its "api." (https://github.com/,
//     https://SUBDOMAIN.ghe.com/).
//
// A result is "" when v3 fits neither layout (the web URL of an API at
// the root of a host not named api.*).
func DeriveGitHubURLs(v3 string) (web, v4 string) {
	u, err := url.Parse(v3)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", ""
	}
	path := strings.TrimSuffix(u.Path, "/")
	origin := u.Scheme + "://" + u.Host
	switch {
	case strings.HasSuffix(path, "/api/v3"):
		prefix := strings.TrimSuffix(path, "/api/v3")
		return origin + prefix + "/", origin + prefix + "/api/graphql"
	case path == "":
		v4 = origin + "/graphql"
		if host, ok := strings.CutPrefix(u.Host, "api."); ok && host != "" {
			web = u.Scheme + "://" + host + "/"
		}
		return web, v4
	}
	return "", ""
}

// validateGitHubURLs refuses GitHub URLs that are not http(s) URLs, and
// names the key to set when one could not be derived.
func (c *Config) validateGitHubURLs() error {
	for _, k := range []struct{ key, value string }{
		{"github.v3_api_url", c.Github.V3APIURL},
		{"github.v4_api_url", c.Github.V4APIURL},
		{"github.web_url", c.Github.WebURL},
	} {
		if k.value == "" {
			return fmt.Errorf("%s is not set and cannot be derived from github.v3_api_url %q, which is neither GitHub Enterprise Server's https://HOST/api/v3/ nor the root of an API host named api.HOST: set %s", k.key, c.Github.V3APIURL, k.key)
		}
		u, err := url.Parse(k.value)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%s %q must be an http:// or https:// URL", k.key, k.value)
		}
	}
	return nil
}
