module svc.local/testcluster/pause

go 1.26.0
