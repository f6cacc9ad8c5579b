module authgate.test/oracle

go 1.22
