// An outside verifier of Kiln's transparency log (issue 17, docs/adr/0026): Go's own
// golang.org/x/mod/sumdb/note and sumdb/tlog, from Debian's golang-golang-x-mod-dev, built in GOPATH
// mode with no network by e2e/tlog.test.ts. It fetches everything over HTTP from a running Kiln
// web server, checks that each checkpoint, inclusion proof, consistency proof and hash tile is
// accepted, and that each is rejected with one bit flipped. One JSON line per check; exit status 1
// when any check went the wrong way.
package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

var base string
var failures int

func report(check string, wantOK bool, err error) {
	ok := err == nil
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	line, _ := json.Marshal(map[string]interface{}{"check": check, "want_ok": wantOK, "ok": ok, "err": msg})
	fmt.Println(string(line))
	if ok != wantOK {
		failures++
	}
}

func get(path string) []byte {
	resp, err := http.Get(base + path)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		panic(err)
	}
	if resp.StatusCode != 200 {
		panic(fmt.Sprintf("GET %s: %d %s", path, resp.StatusCode, body))
	}
	return body
}

func hashes(b64 []string) []tlog.Hash {
	out := make([]tlog.Hash, len(b64))
	for i, s := range b64 {
		raw, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(raw) != tlog.HashSize {
			panic("bad hash " + s)
		}
		copy(out[i][:], raw)
	}
	return out
}

// openCheckpoint verifies the note with the pinned key and parses the C2SP body (origin, size, root).
func openCheckpoint(text []byte, v note.Verifier) (tlog.Tree, error) {
	n, err := note.Open(text, note.VerifierList(v))
	if err != nil {
		return tlog.Tree{}, err
	}
	lines := strings.SplitN(n.Text, "\n", 4)
	if len(lines) < 4 || lines[0] != v.Name() {
		return tlog.Tree{}, fmt.Errorf("checkpoint origin is not %s", v.Name())
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil {
		return tlog.Tree{}, err
	}
	h, err := tlog.ParseHash(lines[2])
	if err != nil {
		return tlog.Tree{}, err
	}
	return tlog.Tree{N: size, Hash: h}, nil
}

func flipByte(b []byte, at int) []byte {
	c := append([]byte(nil), b...)
	c[at] ^= 0x01
	return c
}

// flipSignatureBit flips one bit inside the first signature's Ed25519 bytes (not its key hash).
func flipSignatureBit(text []byte) []byte {
	s := string(text)
	i := strings.LastIndex(s, "\n\n")
	line := s[i+2:]
	sp := strings.LastIndex(line[:len(line)-1], " ")
	raw, _ := base64.StdEncoding.DecodeString(strings.TrimSuffix(line[sp+1:], "\n"))
	raw[10] ^= 0x01
	return []byte(s[:i+2] + line[:sp+1] + base64.StdEncoding.EncodeToString(raw) + "\n")
}

type tileReader struct{ flip bool }

func (r tileReader) Height() int { return 8 }
func (r tileReader) SaveTiles(tiles []tlog.Tile, data [][]byte) {}
func (r tileReader) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		// Go names tiles tile/H/L/N; C2SP drops the height (always 8): tile/L/N.
		p := strings.TrimPrefix(t.Path(), "tile/8/")
		out[i] = get("/tlog/tile/" + p)
		if r.flip {
			out[i] = flipByte(out[i], len(out[i])-1)
		}
	}
	return out, nil
}

func main() {
	base = os.Args[1]
	old, err := os.ReadFile(os.Args[2])
	if err != nil {
		panic(err)
	}
	var vk struct {
		VerifierKey string `json:"verifier_key"`
	}
	if err := json.Unmarshal(get("/v1/tlog/verifier-key"), &vk); err != nil {
		panic(err)
	}
	verifier, err := note.NewVerifier(vk.VerifierKey)
	report("note.NewVerifier", true, err)
	if err != nil {
		os.Exit(1)
	}

	current := get("/tlog/checkpoint")
	tree, err := openCheckpoint(current, verifier)
	report("note.Open current checkpoint", true, err)
	_, err = openCheckpoint(flipSignatureBit(current), verifier)
	report("note.Open checkpoint with a signature bit flipped", false, err)
	rootAt := strings.Index(string(current), "\n") + 1
	rootAt += strings.Index(string(current[rootAt:]), "\n") + 3
	_, err = openCheckpoint(flipByte(current, rootAt), verifier)
	report("note.Open checkpoint with a root hash bit flipped", false, err)
	oldTree, err := openCheckpoint(old, verifier)
	report("note.Open earlier checkpoint", true, err)

	for i := int64(0); i < tree.N; i++ {
		data := get(fmt.Sprintf("/v1/tlog/entries/%d", i))
		leaf := tlog.RecordHash(data)
		var p struct {
			Hashes []string `json:"hashes"`
		}
		json.Unmarshal(get(fmt.Sprintf("/v1/tlog/proofs/inclusion?index=%d&size=%d", i, tree.N)), &p)
		proof := hashes(p.Hashes)
		report(fmt.Sprintf("CheckRecord %d", i), true, tlog.CheckRecord(proof, tree.N, tree.Hash, i, leaf))
		if len(proof) > 0 {
			bad := append([]tlog.Hash(nil), proof...)
			bad[len(bad)-1][7] ^= 0x01
			report(fmt.Sprintf("CheckRecord %d proof bit flipped", i), false, tlog.CheckRecord(bad, tree.N, tree.Hash, i, leaf))
		}
		report(fmt.Sprintf("CheckRecord %d entry bit flipped", i), false,
			tlog.CheckRecord(proof, tree.N, tree.Hash, i, tlog.RecordHash(flipByte(data, 0))))
	}

	// Consistency from the earlier checkpoint, then from every size, with old roots Go computes from
	// the verified tiles.
	hr := tlog.TileHashReader(tree, tileReader{})
	th, err := tlog.TreeHash(tree.N, hr)
	if err == nil && th != tree.Hash {
		err = fmt.Errorf("tiles give root %v, checkpoint says %v", th, tree.Hash)
	}
	report("TreeHash from tiles", true, err)
	for m := int64(1); m <= tree.N; m++ {
		var p struct {
			Hashes []string `json:"hashes"`
		}
		json.Unmarshal(get(fmt.Sprintf("/v1/tlog/proofs/consistency?from=%d&to=%d", m, tree.N)), &p)
		proof := hashes(p.Hashes)
		oldHash, err := tlog.TreeHash(m, hr)
		if m == oldTree.N {
			if oldHash != oldTree.Hash {
				err = fmt.Errorf("earlier checkpoint's root differs from the tiles'")
			}
			report("earlier checkpoint root matches tiles", true, err)
		}
		report(fmt.Sprintf("CheckTree %d -> %d", m, tree.N), true, tlog.CheckTree(proof, tree.N, tree.Hash, m, oldHash))
		if len(proof) > 0 {
			bad := append([]tlog.Hash(nil), proof...)
			bad[0][0] ^= 0x80
			report(fmt.Sprintf("CheckTree %d -> %d proof bit flipped", m, tree.N), false, tlog.CheckTree(bad, tree.N, tree.Hash, m, oldHash))
		}
	}
	for _, i := range []int64{0, tree.N / 2, tree.N - 1} {
		want, err := tlog.ProveRecord(tree.N, i, hr)
		if err == nil {
			var p struct {
				Hashes []string `json:"hashes"`
			}
			json.Unmarshal(get(fmt.Sprintf("/v1/tlog/proofs/inclusion?index=%d&size=%d", i, tree.N)), &p)
			got := hashes(p.Hashes)
			if len(got) != len(want) {
				err = fmt.Errorf("proof lengths differ")
			}
			for k := range got {
				if err == nil && got[k] != want[k] {
					err = fmt.Errorf("proof hash %d differs from Go's ProveRecord over the tiles", k)
				}
			}
		}
		report(fmt.Sprintf("ProveRecord %d over tiles equals the served proof", i), true, err)
	}
	_, err = tlog.TreeHash(tree.N, tlog.TileHashReader(tree, tileReader{flip: true}))
	report("TreeHash from tiles with a bit flipped", false, err)

	if failures > 0 {
		os.Exit(1)
	}
}
