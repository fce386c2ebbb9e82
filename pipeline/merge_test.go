package pipeline

import (
	"strings"
	"testing"
)

func TestMerge3(t *testing.T) {
	const base = "one\ntwo\nthree\nfour\nfive\n"
	for _, tc := range []struct {
		name, base, ours, theirs string
		want                     string
		conflict                 bool
	}{
		{name: "only ours changed", base: base, ours: "one\nTWO\nthree\nfour\nfive\n", theirs: base,
			want: "one\nTWO\nthree\nfour\nfive\n"},
		{name: "only theirs changed", base: base, ours: base, theirs: "one\ntwo\nthree\nfour\nFIVE\n",
			want: "one\ntwo\nthree\nfour\nFIVE\n"},
		{name: "different lines apart", base: base, ours: "ONE\ntwo\nthree\nfour\nfive\n", theirs: "one\ntwo\nthree\nfour\nFIVE\n",
			want: "ONE\ntwo\nthree\nfour\nFIVE\n"},
		{name: "insertions in different places", base: base, ours: "zero\none\ntwo\nthree\nfour\nfive\n", theirs: "one\ntwo\nthree\nfour\nfive\nsix\n",
			want: "zero\none\ntwo\nthree\nfour\nfive\nsix\n"},
		{name: "both made the same change", base: base, ours: "one\nTWO\nthree\nfour\nfive\n", theirs: "one\nTWO\nthree\nfour\nfive\n",
			want: "one\nTWO\nthree\nfour\nfive\n"},
		{name: "deletion and an edit apart", base: base, ours: "one\nthree\nfour\nfive\n", theirs: "one\ntwo\nthree\nfour\nFIVE\n",
			want: "one\nthree\nfour\nFIVE\n"},
		{name: "same line changed differently", base: base, ours: "one\nTWO\nthree\nfour\nfive\n", theirs: "one\nDeux\nthree\nfour\nfive\n",
			conflict: true},
		{name: "adjacent lines changed (git calls it a conflict)", base: base, ours: "one\nTWO\nthree\nfour\nfive\n", theirs: "one\ntwo\nTHREE\nfour\nfive\n",
			conflict: true},
		{name: "both inserted at the same place", base: base, ours: "one\nA\ntwo\nthree\nfour\nfive\n", theirs: "one\nB\ntwo\nthree\nfour\nfive\n",
			conflict: true},
		{name: "one deletes a line the other changes", base: base, ours: "one\nthree\nfour\nfive\n", theirs: "one\nTWO\nthree\nfour\nfive\n",
			conflict: true},
		{name: "both appended differently to an empty base", base: "", ours: "a\n", theirs: "b\n", conflict: true},
		{name: "missing final newline added by one side", base: "one\nx\ntwo", ours: "ONE\nx\ntwo", theirs: "one\nx\ntwo\n",
			want: "ONE\nx\ntwo\n"},
		{name: "binary content never merges", base: "a\x00b\n", ours: "a\x00c\n", theirs: "x\na\x00b\n", conflict: true},
		{name: "many changes interleaved", base: "a\nb\nc\nd\ne\nf\ng\nh\n", ours: "A\nb\nc\nD\ne\nf\ng\nh\n", theirs: "a\nb\nC\nd\ne\nF\ng\nH\n",
			conflict: true},
		{name: "many changes apart", base: "a\nb\nc\nd\ne\nf\ng\nh\n", ours: "A\nb\nc\nd\nE\nf\ng\nh\n", theirs: "a\nb\nC\nd\ne\nf\nG\nh\n",
			want: "A\nb\nC\nd\nE\nf\nG\nh\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Merge3([]byte(tc.base), []byte(tc.ours), []byte(tc.theirs))
			if ok == tc.conflict {
				t.Fatalf("merged %v, want conflict %v (got %q)", ok, tc.conflict, got)
			}
			if ok && string(got) != tc.want {
				t.Errorf("merged:\n%q\nwant:\n%q", got, tc.want)
			}
		})
	}
}

// TestMerge3ManyLines: distinct lines past the surrogate range of runes
// still map to lines one for one.
func TestMerge3ManyLines(t *testing.T) {
	var b strings.Builder
	for i := range 60000 {
		b.WriteString(strings.Repeat("x", i%7) + string(rune('a'+i%26)) + itoa(i) + "\n")
	}
	base := b.String()
	ours := "first\n" + base
	theirs := base + "last\n"
	got, ok := Merge3([]byte(base), []byte(ours), []byte(theirs))
	if !ok || string(got) != "first\n"+base+"last\n" {
		t.Fatalf("merge of 60000 distinct lines: ok %v, length %d", ok, len(got))
	}
}

func itoa(i int) string {
	var d []byte
	for {
		d = append([]byte{byte('0' + i%10)}, d...)
		if i /= 10; i == 0 {
			return string(d)
		}
	}
}

func TestMergeFile(t *testing.T) {
	v := func(s string) FileVersion { return FileVersion{Content: []byte(s), Exists: true} }
	absent := FileVersion{}
	put := func(s string) FileChange { return FileChange{Path: "f.txt", Content: []byte(s)} }
	del := FileChange{Path: "f.txt", Deleted: true}
	for _, tc := range []struct {
		name         string
		base, theirs FileVersion
		ours         FileChange
		keep         bool
		want         string
		conflict     string
	}{
		{name: "the push left the file alone: ours", base: v("a\n"), theirs: v("a\n"), ours: put("b\n"), keep: true, want: "b\n"},
		{name: "the push made the same change: nothing to write", base: v("a\n"), theirs: v("b\n"), ours: put("b\n")},
		{name: "Forge left the file as it was: theirs stays", base: v("a\n"), theirs: v("c\n"), ours: put("a\n")},
		{name: "both added the same file", base: absent, theirs: v("n\n"), ours: put("n\n")},
		{name: "both changed other lines: merged", base: v("1\n2\n3\n"), theirs: v("1\n2\nthree\n"), ours: put("one\n2\n3\n"),
			keep: true, want: "one\n2\nthree\n"},
		{name: "both changed the same line", base: v("1\n"), theirs: v("x\n"), ours: put("y\n"), conflict: ConflictSameLines},
		{name: "Forge deleted a file the push changed", base: v("1\n"), theirs: v("2\n"), ours: del, conflict: ConflictDeletedByUs},
		{name: "the push deleted a file Forge changed", base: v("1\n"), theirs: absent, ours: put("2\n"), conflict: ConflictDeletedByThem},
		{name: "both deleted", base: v("1\n"), theirs: absent, ours: del},
		{name: "Forge deleted a file the push left alone", base: v("1\n"), theirs: v("1\n"), ours: del, keep: true},
		{name: "both added different files", base: absent, theirs: v("a\n"), ours: put("b\n"), conflict: ConflictSameLines},
		{name: "binary changed on both sides", base: v("\x00a"), theirs: v("\x00b"), ours: put("\x00c"), conflict: ConflictBinary},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, keep, conflict := MergeFile(tc.base, tc.theirs, tc.ours)
			switch {
			case tc.conflict != "":
				if conflict == nil || conflict.Why != tc.conflict || conflict.Path != "f.txt" {
					t.Fatalf("conflict %+v, want %q", conflict, tc.conflict)
				}
				return
			case conflict != nil:
				t.Fatalf("unexpected conflict %+v", conflict)
			}
			if keep != tc.keep {
				t.Fatalf("keep %v, want %v", keep, tc.keep)
			}
			if keep && !out.Deleted && string(out.Content) != tc.want {
				t.Errorf("content %q, want %q", out.Content, tc.want)
			}
			if keep && out.Deleted != tc.ours.Deleted {
				t.Errorf("deleted %v, want %v", out.Deleted, tc.ours.Deleted)
			}
		})
	}
}
