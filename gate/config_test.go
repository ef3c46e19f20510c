package gate

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseConfigRoundTrip(t *testing.T) {
	in := Config{
		Egress:      EgressList,
		Allow:       []Rule{{Host: "*.github.com"}, {CIDR: "198.51.100.7/32", Port: 8080}},
		Private:     []Rule{{Host: "db.internal", Port: 5432}},
		Closed:      []string{"172.17.0.1/32", "192.168.65.254"},
		Credentials: []Credential{{Name: "anthropic", Host: "api.anthropic.com", Header: "x-api-key", Value: secret}},
	}
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := ParseConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(out)
	if string(again) != string(data) {
		t.Errorf("round trip:\n%s\n%s", data, again)
	}
}

func TestConfigRefusals(t *testing.T) {
	cred := func(c Credential) Config {
		if c.Name == "" {
			c.Name = "api"
		}
		if c.Host == "" {
			c.Host = "api.example.com"
		}
		if c.Header == "" {
			c.Header = "Authorization"
		}
		if c.Value == "" {
			c.Value = secret
		}
		return Config{Egress: EgressNone, Credentials: []Credential{c}}
	}
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "egress is not set"},
		{Config{Egress: "some"}, `egress "some" is not`},
		{Config{Egress: EgressOpen, Allow: []Rule{{Host: "a.example"}}}, "takes no allow rules"},
		{Config{Egress: EgressList, Allow: []Rule{{}}}, "allow rule 1: a rule needs a host or a cidr"},
		{Config{Egress: EgressList, Allow: []Rule{{Host: "a.example", CIDR: "10.0.0.0/8"}}}, "not both"},
		{Config{Egress: EgressList, Allow: []Rule{{Host: "10.0.0.1"}}}, "give it as a cidr"},
		{Config{Egress: EgressList, Allow: []Rule{{Host: "a b"}}}, "not a host name"},
		{Config{Egress: EgressList, Allow: []Rule{{Host: "*.*.example"}}}, "not a host name"},
		{Config{Egress: EgressList, Allow: []Rule{{CIDR: "10.0.0.0/33"}}}, "not a CIDR"},
		{Config{Egress: EgressList, Allow: []Rule{{Host: "a.example", Port: 70000}}}, "not a port"},
		{Config{Egress: EgressOpen, Private: []Rule{{CIDR: "x"}}}, "private rule 1"},
		{Config{Egress: EgressOpen, Closed: []string{"nope"}}, `closed "nope"`},
		{cred(Credential{Name: "_health"}), "a name is letters"},
		{cred(Credential{Name: "a/b"}), "a name is letters"},
		{cred(Credential{Host: "*.example.com"}), "not a host name or an address"},
		{cred(Credential{Host: "2001:db8::1"}), "IPv6"},
		{cred(Credential{Header: "Bad Header"}), "not a header name"},
		{cred(Credential{Header: "Proxy-Authorization"}), "header of the connection"},
		{cred(Credential{Value: "line\nbreak " + secret}), "a character a header cannot carry"},
		{Config{Egress: EgressNone, Credentials: []Credential{{Name: "a", Host: "x.example", Header: "X-Key", Value: "v"}, {Name: "a", Host: "y.example", Header: "X-Key", Value: "w"}}}, "named twice"},
	} {
		err := tc.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error saying %q", tc.cfg, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("the error quotes the credential's value: %v", err)
		}
	}
}

func TestParseConfigQuotesNoValue(t *testing.T) {
	for _, data := range []string{
		`{"egress":"none","credentials":[{"name":"a","host":"x.example","header":"X-Key","value":"` + secret + "\x01" + `"}]}`,
		`{"egress":"none","credentials":[{"name":"a","host":"x.example","header":"X-Key","value":"` + secret + `"}]`,
		`{"egress":"none","credentials":[{"name":"a","host":"x.example","header":"X-Key","value":["` + secret + `"]}]}`,
		`{"egress":"none","extra":"` + secret + `"}`,
		``,
		`{"egress":"open"} {"egress":"none"}`,
	} {
		_, err := ParseConfig([]byte(data))
		if err == nil {
			t.Errorf("%q parsed", data)
			continue
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "sk-") {
			t.Errorf("the error quotes a value: %v", err)
		}
	}
}
