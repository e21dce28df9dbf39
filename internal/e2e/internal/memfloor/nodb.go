//go:build nosqlite

package main

import "errors"

// openDB: this build links no SQLite.
func openDB(string) (func(), error) {
	return nil, errors.New("built with -tags nosqlite: no database")
}
