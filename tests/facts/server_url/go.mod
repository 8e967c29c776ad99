module gpushare/tests/facts/server_url

go 1.26
