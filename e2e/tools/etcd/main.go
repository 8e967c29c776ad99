// Command etcd is go.etcd.io/etcd/server/v3/etcdmain, the same entry point as the released etcd binary.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
