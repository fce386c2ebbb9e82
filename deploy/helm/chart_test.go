// Package helm_test renders deploy/helm/forge with Helm's own engine
// (helm.sh/helm/v4) for several value sets and decodes every object
// strictly into the Kubernetes API types (k8s.io/api): an unknown or
// misplaced field, a missing required one or a reference to nothing fails.
// It is a module of its own so Forge's module does not carry Helm's
// dependencies; .ci/run runs it.
package helm_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// rendered is one value set's objects, by kind.
type rendered struct {
	configMaps  []corev1.ConfigMap
	secrets     []corev1.Secret
	services    []corev1.Service
	deployments []appsv1.Deployment
	sets        []appsv1.StatefulSet
	monitors    []serviceMonitor
}

// serviceMonitor is the Prometheus Operator's monitoring.coreos.com/v1
// ServiceMonitor, as far as the chart writes it.
type serviceMonitor struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		Selector  struct{ MatchLabels map[string]string } `json:"selector"`
		Endpoints []struct {
			Port     string `json:"port"`
			Path     string `json:"path"`
			Interval string `json:"interval"`
		} `json:"endpoints"`
	} `json:"spec"`
}

func render(t *testing.T, values string) (rendered, error) {
	t.Helper()
	chrt, err := loader.Load("forge")
	if err != nil {
		t.Fatal(err)
	}
	vals := map[string]any{}
	if err := yaml.Unmarshal([]byte(values), &vals); err != nil {
		t.Fatal(err)
	}
	rv, err := util.ToRenderValues(chrt, vals, common.ReleaseOptions{Name: "forge", Namespace: "forge", IsInstall: true}, common.DefaultCapabilities)
	if err != nil {
		return rendered{}, err
	}
	files, err := engine.Engine{Strict: true}.Render(chrt, rv)
	if err != nil {
		return rendered{}, err
	}
	var r rendered
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range files {
			if !yield(n) {
				return
			}
		}
	})
	for _, name := range names {
		if !strings.HasSuffix(name, ".yaml") {
			continue
		}
		for _, doc := range strings.Split(files[name], "\n---") {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			var head struct{ APIVersion, Kind string }
			if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
				t.Fatalf("%s: %v\n%s", name, err, doc)
			}
			strict := func(into any) {
				if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
					t.Errorf("%s (%s %s): %v\n%s", name, head.APIVersion, head.Kind, err, doc)
				}
			}
			switch head.APIVersion + " " + head.Kind {
			case "v1 ConfigMap":
				r.configMaps = append(r.configMaps, corev1.ConfigMap{})
				strict(&r.configMaps[len(r.configMaps)-1])
			case "v1 Secret":
				r.secrets = append(r.secrets, corev1.Secret{})
				strict(&r.secrets[len(r.secrets)-1])
			case "v1 Service":
				r.services = append(r.services, corev1.Service{})
				strict(&r.services[len(r.services)-1])
			case "apps/v1 Deployment":
				r.deployments = append(r.deployments, appsv1.Deployment{})
				strict(&r.deployments[len(r.deployments)-1])
			case "apps/v1 StatefulSet":
				r.sets = append(r.sets, appsv1.StatefulSet{})
				strict(&r.sets[len(r.sets)-1])
			case "monitoring.coreos.com/v1 ServiceMonitor":
				r.monitors = append(r.monitors, serviceMonitor{})
				strict(&r.monitors[len(r.monitors)-1])
			default:
				t.Errorf("%s: an object of kind %s %s the test does not know", name, head.APIVersion, head.Kind)
			}
		}
	}
	return r, nil
}

const appCreds = `
github:
  app:
    integrationID: 12345
    webhookSecret: s3cret
    privateKey: |
      -----BEGIN RSA PRIVATE KEY-----
      MIIB
      -----END RSA PRIVATE KEY-----
`

// TestChart: each value set renders objects the API server would take,
// with the workload the database asks for.
func TestChart(t *testing.T) {
	cases := []struct {
		name, values string
		kind         string // StatefulSet or Deployment
		replicas     int32
		secret       string // the Secret the App's credentials come from ("": none)
		monitor      bool
	}{
		{"defaults: SQLite, setup page", ``, "StatefulSet", 1, "", false},
		{"SQLite with the App's credentials", appCreds, "StatefulSet", 1, "forge", false},
		{"PostgreSQL, three replicas", appCreds + `
replicas: 3
publicURL: https://forge.example.com
database: {url: "postgres://forge:pw@postgres:5432/forge"}
serviceMonitor: {enabled: true, labels: {release: prometheus}}
extraEnvFrom: [{secretRef: {name: model-keys}}]
`, "Deployment", 3, "forge", true},
		{"existing Secrets", `
replicas: 2
github: {existingSecret: forge-app}
database: {existingSecret: forge-db, existingSecretKey: dsn}
unmaskedProc: false
seccompProfile: {type: Localhost, localhostProfile: profiles/forge-bwrap.json}
resources: {limits: {memory: 2Gi}}
`, "Deployment", 2, "forge-app", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := render(t, c.values)
			if err != nil {
				t.Fatal(err)
			}
			var pod corev1.PodTemplateSpec
			var replicas *int32
			var claims []corev1.PersistentVolumeClaim
			var selector map[string]string
			switch {
			case c.kind == "StatefulSet" && len(r.sets) == 1 && len(r.deployments) == 0:
				pod, replicas, claims, selector = r.sets[0].Spec.Template, r.sets[0].Spec.Replicas, r.sets[0].Spec.VolumeClaimTemplates, r.sets[0].Spec.Selector.MatchLabels
				if r.sets[0].Spec.ServiceName == "" {
					t.Error("StatefulSet without serviceName")
				}
			case c.kind == "Deployment" && len(r.deployments) == 1 && len(r.sets) == 0:
				pod, replicas, selector = r.deployments[0].Spec.Template, r.deployments[0].Spec.Replicas, r.deployments[0].Spec.Selector.MatchLabels
			default:
				t.Fatalf("%d StatefulSets, %d Deployments, want one %s", len(r.sets), len(r.deployments), c.kind)
			}
			if replicas == nil || *replicas != c.replicas {
				t.Errorf("replicas %v, want %d", replicas, c.replicas)
			}
			checkPod(t, pod, selector, claims, r, c.secret)
			if len(r.services) != 1 || !subset(r.services[0].Spec.Selector, pod.Labels) || r.services[0].Spec.Ports[0].TargetPort.String() != "http" {
				t.Errorf("services %+v do not select the pods %v on http", r.services, pod.Labels)
			}
			if len(r.configMaps) != 1 {
				t.Fatalf("%d ConfigMaps, want forge.yml's", len(r.configMaps))
			}
			var conf struct {
				Server struct {
					Address string
					Port    int
				}
				DataDir string `json:"data_dir"`
				Git     struct {
					WorkDir string `json:"work_dir"`
				}
				Agents struct{ Sandbox string }
			}
			if err := yaml.Unmarshal([]byte(r.configMaps[0].Data["forge.yml"]), &conf); err != nil {
				t.Fatalf("forge.yml: %v", err)
			}
			if conf.Server.Port != 8080 || conf.DataDir != "/var/lib/forge" || conf.Git.WorkDir != "/var/cache/forge/work" || conf.Agents.Sandbox != "bwrap" {
				t.Errorf("forge.yml %+v: want port 8080, the image's data and work directories, bwrap", conf)
			}
			if got := len(r.monitors) == 1; got != c.monitor {
				t.Errorf("%d ServiceMonitors, want %v", len(r.monitors), c.monitor)
			} else if got {
				m := r.monitors[0]
				if len(m.Spec.Endpoints) != 1 || m.Spec.Endpoints[0].Port != "http" || m.Spec.Endpoints[0].Path != "/metrics" || !subset(m.Spec.Selector.MatchLabels, r.services[0].Labels) || m.Metadata.Labels["release"] != "prometheus" {
					t.Errorf("ServiceMonitor %+v does not scrape the Service's /metrics", m)
				}
			}
		})
	}
}

// TestChartRefusals: values that cannot work are refused when rendered,
// not found out by a crashing pod.
func TestChartRefusals(t *testing.T) {
	for values, want := range map[string]string{
		`replicas: 3`:                                         "replicas > 1 needs PostgreSQL",
		`github: {app: {integrationID: 1}}`:                   "github.app.webhookSecret is required",
		`github: {app: {integrationID: 1, webhookSecret: x}}`: "github.app.privateKey is required",
		`replicas: 2
database: {url: ""}`: "replicas > 1 needs PostgreSQL",
	} {
		if _, err := render(t, values); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("values %q: %v, want %q", values, err, want)
		}
	}
}

func subset(sub, of map[string]string) bool {
	if len(sub) == 0 {
		return false
	}
	for k, v := range sub {
		if of[k] != v {
			return false
		}
	}
	return true
}

// checkPod holds the pod template to what Forge and the image need, and to
// the fields the API server requires.
func checkPod(t *testing.T, pod corev1.PodTemplateSpec, selector map[string]string, claims []corev1.PersistentVolumeClaim, r rendered, appSecret string) {
	t.Helper()
	if !subset(selector, pod.Labels) {
		t.Errorf("selector %v does not match the pod's labels %v", selector, pod.Labels)
	}
	for k, v := range pod.Labels {
		if errs := append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...); len(errs) > 0 {
			t.Errorf("label %s=%s: %v", k, v, errs)
		}
	}
	sc := pod.Spec.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != 10001 || sc.SeccompProfile == nil {
		t.Errorf("pod security context %+v: want the image's non-root user 10001 and a seccomp profile", sc)
	}
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("%d containers, want forge", len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]
	if c.Name == "" || c.Image == "" || !strings.Contains(c.Image, ":") {
		t.Errorf("container name %q image %q", c.Name, c.Image)
	}
	if !slices.Equal(c.Args, []string{"--config", "/etc/forge/forge.yml"}) {
		t.Errorf("args %v: the image's entrypoint is forge serve; want its configuration", c.Args)
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["http"] != 8080 {
		t.Errorf("container ports %v, want http 8080", c.Ports)
	}
	for name, p := range map[string]*corev1.Probe{"startup": c.StartupProbe, "liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		want := "/healthz"
		if name == "readiness" {
			want = "/readyz"
		}
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != want || p.HTTPGet.Port.String() != "http" {
			t.Errorf("%s probe %+v, want GET %s on http", name, p, want)
		}
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		volumes[v.Name] = v
	}
	for _, pvc := range claims {
		volumes[pvc.Name] = corev1.Volume{Name: pvc.Name}
		if len(pvc.Spec.AccessModes) == 0 || pvc.Spec.Resources.Requests.Storage().IsZero() {
			t.Errorf("volume claim %s: %+v lacks an access mode or a size", pvc.Name, pvc.Spec)
		}
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		if _, ok := volumes[m.Name]; !ok {
			t.Errorf("mount %s of a volume the pod lacks", m.Name)
		}
		mounts[m.MountPath] = m.Name
	}
	for _, p := range []string{"/etc/forge", "/var/lib/forge", "/var/cache/forge", "/tmp"} {
		if mounts[p] == "" {
			t.Errorf("nothing mounted at %s (the root filesystem is read-only)", p)
		}
	}
	if cm := volumes[mounts["/etc/forge"]].ConfigMap; cm == nil || len(r.configMaps) == 0 || cm.Name != r.configMaps[0].Name {
		t.Errorf("/etc/forge is not the rendered ConfigMap")
	}
	if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
		t.Errorf("container security context %+v: want a read-only root and every capability dropped", sc)
	}
	secrets := map[string]corev1.Secret{}
	for _, s := range r.secrets {
		secrets[s.Name] = s
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
		if ref := e.ValueFrom; ref != nil && ref.SecretKeyRef != nil {
			s, ok := secrets[ref.SecretKeyRef.Name]
			if ok {
				if _, has := s.StringData[ref.SecretKeyRef.Key]; !has {
					t.Errorf("%s: the Secret %s has no key %s", e.Name, s.Name, ref.SecretKeyRef.Key)
				}
			} else if !strings.HasPrefix(ref.SecretKeyRef.Name, "forge-") {
				t.Errorf("%s: the Secret %s is neither rendered nor an existingSecret", e.Name, ref.SecretKeyRef.Name)
			}
		}
	}
	got := ""
	if e, ok := env["GITHUB_APP_PRIVATE_KEY"]; ok && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
		got = e.ValueFrom.SecretKeyRef.Name
	}
	if got != appSecret {
		t.Errorf("the App's private key from Secret %q, want %q", got, appSecret)
	}
	for _, s := range r.secrets {
		for k, v := range s.StringData {
			if strings.Contains(fmt.Sprint(pod), v) {
				t.Errorf("the Secret's %s is written in the pod spec", k)
			}
		}
	}
}
