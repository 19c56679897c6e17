-- Demo database for docker/compose.mssql.yaml: change tracking on the database and on one
-- table, as the bridge's SQL Server change source needs. Safe to run again.
IF DB_ID(N'demo') IS NULL
    CREATE DATABASE demo;
GO
USE demo;
GO
-- Snapshot isolation lets readers of CHANGETABLE see one consistent version (Microsoft's
-- recommendation for change tracking).
ALTER DATABASE demo SET ALLOW_SNAPSHOT_ISOLATION ON;
GO
IF NOT EXISTS (SELECT 1 FROM sys.change_tracking_databases WHERE database_id = DB_ID(N'demo'))
    ALTER DATABASE demo SET CHANGE_TRACKING = ON (CHANGE_RETENTION = 2 DAYS, AUTO_CLEANUP = ON);
GO
IF OBJECT_ID(N'dbo.orders', N'U') IS NULL
    CREATE TABLE dbo.orders (
        id bigint IDENTITY(1, 1) NOT NULL CONSTRAINT pk_orders PRIMARY KEY,
        customer nvarchar(200) NOT NULL,
        total decimal(12, 2) NOT NULL,
        created_at datetime2(3) NOT NULL CONSTRAINT df_orders_created DEFAULT SYSUTCDATETIME()
    );
GO
IF NOT EXISTS (SELECT 1 FROM sys.change_tracking_tables WHERE object_id = OBJECT_ID(N'dbo.orders'))
    ALTER TABLE dbo.orders ENABLE CHANGE_TRACKING WITH (TRACK_COLUMNS_UPDATED = OFF);
GO
