module topospread.test/nullwebhook

go 1.26
