/*
 * umad_str.h: the names of management classes, methods, attributes and
 * MAD statuses (IBA 13.4.4-13.4.7, 15.2.5 for the SA, 14.2.5 for the
 * SM), for diagnostics' messages. Unknown values get a fixed "unknown"
 * string, as rdma-core's.
 */
#include "sofumad.h"

#include <endian.h>
#include <infiniband/umad_sa.h>
#include <infiniband/umad_sm.h>
#include <infiniband/umad_str.h>
#include <infiniband/umad_types.h>
#include <stddef.h>

struct name {
	unsigned v;
	const char *s;
};

static const char *lookup(const struct name *t, size_t n, unsigned v, const char *dflt)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].v == v)
			return t[i].s;
	return dflt;
}

#define LOOKUP(t, v, d) lookup(t, sizeof(t) / sizeof(t[0]), v, d)

static const struct name classes[] = {
    {UMAD_CLASS_SUBN_LID_ROUTED, "Subn"},  {UMAD_CLASS_SUBN_DIRECTED_ROUTE, "SubnDR"},
    {UMAD_CLASS_SUBN_ADM, "SubnAdm"},	   {UMAD_CLASS_PERF_MGMT, "Perf"},
    {UMAD_CLASS_BM, "BM"},		   {UMAD_CLASS_DEVICE_MGMT, "DevMgt"},
    {UMAD_CLASS_CM, "ComMgt"},		   {UMAD_CLASS_SNMP, "SNMP"},
    {UMAD_CLASS_DEVICE_ADM, "DevAdm"},	   {UMAD_CLASS_BOOT_MGMT, "BootMgt"},
    {UMAD_CLASS_BIS, "BIS"},		   {UMAD_CLASS_CONG_MGMT, "CongestionManagement"},
};

SOFU_EXPORT const char *umad_class_str(uint8_t mgmt_class)
{
	if (mgmt_class >= UMAD_CLASS_VENDOR_RANGE1_START && mgmt_class <= UMAD_CLASS_VENDOR_RANGE1_END)
		return "Vendor";
	if (mgmt_class >= UMAD_CLASS_VENDOR_RANGE2_START && mgmt_class <= UMAD_CLASS_VENDOR_RANGE2_END)
		return "Vendor with OUI";
	if (mgmt_class >= UMAD_CLASS_APPLICATION_START && mgmt_class <= UMAD_CLASS_APPLICATION_END &&
	    !LOOKUP(classes, mgmt_class, NULL))
		return "Application";
	return LOOKUP(classes, mgmt_class, "<unknown>");
}

static const struct name methods[] = {
    {UMAD_METHOD_GET, "Get"},		  {UMAD_METHOD_SET, "Set"},
    {UMAD_METHOD_GET_RESP, "GetResp"},	  {UMAD_METHOD_SEND, "Send"},
    {UMAD_METHOD_TRAP, "Trap"},		  {UMAD_METHOD_REPORT, "Report"},
    {UMAD_METHOD_REPORT_RESP, "ReportResp"}, {UMAD_METHOD_TRAP_REPRESS, "TrapRepress"},
};

static const struct name sa_methods[] = {
    {UMAD_SA_METHOD_GET_TABLE, "GetTable"},
    {UMAD_SA_METHOD_GET_TABLE_RESP, "GetTableResp"},
    {UMAD_SA_METHOD_DELETE, "Delete"},
    {UMAD_SA_METHOD_DELETE_RESP, "DeleteResp"},
    {UMAD_SA_METHOD_GET_MULTI, "GetMulti"},
    {UMAD_SA_METHOD_GET_MULTI_RESP, "GetMultiResp"},
    {UMAD_SA_METHOD_GET_TRACE_TABLE, "GetTraceTable"},
};

SOFU_EXPORT const char *umad_method_str(uint8_t mgmt_class, uint8_t method)
{
	const char *s = NULL;

	if (mgmt_class == UMAD_CLASS_SUBN_ADM)
		s = LOOKUP(sa_methods, method, NULL);
	return s ? s : LOOKUP(methods, method, "<unknown>");
}

static const struct name common_attrs[] = {
    {UMAD_ATTR_CLASS_PORT_INFO, "ClassPortInfo"},
    {UMAD_ATTR_NOTICE, "Notice"},
    {UMAD_ATTR_INFORM_INFO, "InformInfo"},
};

static const struct name sm_attrs[] = {
    {UMAD_SM_ATTR_NODE_DESC, "NodeDescription"},
    {UMAD_SM_ATTR_NODE_INFO, "NodeInfo"},
    {UMAD_SM_ATTR_SWITCH_INFO, "SwitchInfo"},
    {UMAD_SM_ATTR_GUID_INFO, "GUIDInfo"},
    {UMAD_SM_ATTR_PORT_INFO, "PortInfo"},
    {UMAD_SM_ATTR_PKEY_TABLE, "P_KeyTable"},
    {UMAD_SM_ATTR_SLVL_TABLE, "SLtoVLMappingTable"},
    {UMAD_SM_ATTR_VL_ARB_TABLE, "VLArbitrationTable"},
    {UMAD_SM_ATTR_LINEAR_FT, "LinearForwardingTable"},
    {UMAD_SM_ATTR_RANDOM_FT, "RandomForwardingTable"},
    {UMAD_SM_ATTR_MCAST_FT, "MulticastForwardingTable"},
    {UMAD_SM_ATTR_SM_INFO, "SMInfo"},
    {UMAD_SM_ATTR_VENDOR_DIAG, "VendorDiag"},
    {UMAD_SM_ATTR_LED_INFO, "LedInfo"},
};

static const struct name sa_attrs[] = {
    {UMAD_SA_ATTR_NODE_REC, "NodeRecord"},
    {UMAD_SA_ATTR_PORT_INFO_REC, "PortInfoRecord"},
    {UMAD_SA_ATTR_SLVL_REC, "SLtoVLMappingTableRecord"},
    {UMAD_SA_ATTR_SWITCH_INFO_REC, "SwitchInfoRecord"},
    {UMAD_SA_ATTR_LINEAR_FT_REC, "LinearForwardingTableRecord"},
    {UMAD_SA_ATTR_RANDOM_FT_REC, "RandomForwardingTableRecord"},
    {UMAD_SA_ATTR_MCAST_FT_REC, "MulticastForwardingTableRecord"},
    {UMAD_SA_ATTR_SM_INFO_REC, "SMInfoRecord"},
    {UMAD_SA_ATTR_INFORM_INFO_REC, "InformInfoRecord"},
    {UMAD_SA_ATTR_LINK_REC, "LinkRecord"},
    {UMAD_SA_ATTR_GUID_INFO_REC, "GuidInfoRecord"},
    {UMAD_SA_ATTR_SERVICE_REC, "ServiceRecord"},
    {UMAD_SA_ATTR_PKEY_TABLE_REC, "P_KeyTableRecord"},
    {UMAD_SA_ATTR_PATH_REC, "PathRecord"},
    {UMAD_SA_ATTR_VL_ARB_REC, "VLArbitrationTableRecord"},
    {UMAD_SA_ATTR_MCMEMBER_REC, "MCMemberRecord"},
    {UMAD_SA_ATTR_TRACE_REC, "TraceRecord"},
    {UMAD_SA_ATTR_MULTI_PATH_REC, "MultiPathRecord"},
    {UMAD_SA_ATTR_SERVICE_ASSOC_REC, "ServiceAssociationRecord"},
};

SOFU_EXPORT const char *umad_attribute_str(uint8_t mgmt_class, __be16 attr_id)
{
	unsigned a = be16toh(attr_id);
	const char *s = NULL;

	if (mgmt_class == UMAD_CLASS_SUBN_LID_ROUTED || mgmt_class == UMAD_CLASS_SUBN_DIRECTED_ROUTE)
		s = LOOKUP(sm_attrs, a, NULL);
	else if (mgmt_class == UMAD_CLASS_SUBN_ADM)
		s = LOOKUP(sa_attrs, a, NULL);
	return s ? s : LOOKUP(common_attrs, a, "<unknown>");
}

/* IBA 13.4.7: bit 0 busy, 1 redirect, 2-4 the invalid-field code */
SOFU_EXPORT const char *umad_common_mad_status_str(__be16 _status)
{
	unsigned status = be16toh(_status);

	if (status & UMAD_STATUS_BUSY)
		return "Busy";
	if (status & UMAD_STATUS_REDIRECT)
		return "Redirection required";
	switch (status & UMAD_STATUS_INVALID_FIELD_MASK) {
	case 0:
		return "Success";
	case UMAD_STATUS_BAD_VERSION:
		return "Bad Version";
	case UMAD_STATUS_METHOD_NOT_SUPPORTED:
		return "Method not supported";
	case UMAD_STATUS_ATTR_NOT_SUPPORTED:
		return "Method/Attribute combo not supported";
	case UMAD_STATUS_INVALID_ATTR_VALUE:
		return "Invalid attribute/modifier field";
	default:
		return "Undefined Error";
	}
}

/* IBA 15.2.5: the SA's class-specific code, bits 8-15 */
SOFU_EXPORT const char *umad_sa_mad_status_str(__be16 _status)
{
	switch ((be16toh(_status) & UMAD_STATUS_CLASS_MASK) >> 8) {
	case UMAD_SA_STATUS_SUCCESS:
		return "Success";
	case UMAD_SA_STATUS_NO_RESOURCES:
		return "No Resources";
	case UMAD_SA_STATUS_REQ_INVALID:
		return "Request Invalid";
	case UMAD_SA_STATUS_NO_RECORDS:
		return "No Records";
	case UMAD_SA_STATUS_TOO_MANY_RECORDS:
		return "Too Many Records";
	case UMAD_SA_STATUS_INVALID_GID:
		return "Invalid GID";
	case UMAD_SA_STATUS_INSUF_COMPS:
		return "Insufficient Components";
	case UMAD_SA_STATUS_REQ_DENIED:
		return "Request Denied";
	case UMAD_SA_STATUS_PRI_SUGGESTED:
		return "Priority Suggested";
	default:
		return "Undefined Error";
	}
}
