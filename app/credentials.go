package app

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"gopkg.in/yaml.v3"
)

// Credentials are what GitHub's manifest flow returns for the new App. The
// first-run setup stores them in the data directory, readable by the
// server's user only, where the next start reads them.
type Credentials struct {
	IntegrationID int64  `yaml:"integration_id"`
	Slug          string `yaml:"slug"`
	HTMLURL       string `yaml:"html_url"`
	WebhookSecret string `yaml:"webhook_secret"`
	PrivateKey    string `yaml:"private_key"`
	ClientID      string `yaml:"client_id"`
	ClientSecret  string `yaml:"client_secret"`
}

const credentialsFile = "github-app.yml"

func credentialsPath(dataDir string) string { return filepath.Join(dataDir, credentialsFile) }

// LoadCredentials reads stored credentials; none stored is (nil, nil).
func LoadCredentials(dataDir string) (*Credentials, error) {
	p := credentialsPath(dataDir)
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read App credentials: %w", err)
	}
	var c Credentials
	if err := yaml.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("parse App credentials %s: %w", p, err)
	}
	return &c, nil
}

// ErrCredentialsStored says an App's credentials were already stored: the
// first setup to finish wins, and no later one replaces its App.
var ErrCredentialsStored = errors.New("App credentials are already stored")

// SaveCredentials creates the file with mode 0600, exclusively: it writes a
// temporary file and links it to its name, which fails if the name exists
// (link(2) refuses an existing name as O_EXCL does), so exactly one App is
// ever stored, even by two processes sharing the data directory, and a
// crash never leaves half a private key behind.
func SaveCredentials(dataDir string, c Credentials) error {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}
	data, err := yaml.Marshal(c)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dataDir, ".github-app-*.yml")
	if err != nil {
		return fmt.Errorf("store App credentials: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("store App credentials: %w", err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("store App credentials: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("store App credentials: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("store App credentials: %w", err)
	}
	if err := os.Link(tmp.Name(), credentialsPath(dataDir)); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return ErrCredentialsStored
		}
		return fmt.Errorf("store App credentials: %w", err)
	}
	if d, err := os.Open(dataDir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// apply fills the App settings the configuration left empty: values from
// the file or the environment always win over stored ones.
func (c *Credentials) apply(cfg *Config) {
	a := &cfg.Github.App
	if a.IntegrationID == 0 {
		a.IntegrationID = c.IntegrationID
	}
	if a.PrivateKey == "" {
		a.PrivateKey = c.PrivateKey
	}
	if a.WebhookSecret == "" {
		a.WebhookSecret = c.WebhookSecret
	}
	if cfg.Github.OAuth.ClientID == "" {
		cfg.Github.OAuth.ClientID = c.ClientID
	}
	if cfg.Github.OAuth.ClientSecret == "" {
		cfg.Github.OAuth.ClientSecret = c.ClientSecret
	}
}
